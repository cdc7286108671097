"""The crawl policy: origins, fetch outcomes, records with their TTL and backoff,
the per-origin state machine and the bookkeeping of held requests.

No Scrapy, no Twisted, no I/O: the time is always passed in, so every rule here
can be unit-tested with a fake clock.
"""
