"""``python -m scrapy_rep9309 check ROBOTS URL...`` (see ``scrapy_rep9309.tools.cli``)."""

import sys

from scrapy_rep9309.tools.cli import main

sys.exit(main())
