"""``python -m scrapy_rep9309 check ROBOTS URL...`` (see ``scrapy_rep9309.cli``)."""

import sys

from scrapy_rep9309.cli import main

sys.exit(main())
