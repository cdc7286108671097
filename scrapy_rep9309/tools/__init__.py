"""Command-line tools that work without a Scrapy project: ``python -m scrapy_rep9309 check``."""
