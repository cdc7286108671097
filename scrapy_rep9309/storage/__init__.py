"""Where origin records (and held requests) live: the store interface and its implementations.

No Scrapy and no Twisted: a store gets the crawler only through ``from_crawler``.
"""
