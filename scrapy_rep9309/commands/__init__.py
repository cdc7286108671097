"""Scrapy commands added by scrapy-rep9309 (registered via the ``scrapy.commands`` entry point)."""
