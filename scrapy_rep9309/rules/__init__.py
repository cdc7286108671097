"""The RFC 9309 parser and matcher: robots.txt bytes in, decisions out.

No Scrapy, no Twisted, no I/O: usable on its own (``from scrapy_rep9309 import RobotsTxt``)
and importable where neither is installed. ``core`` picks the compiled or the
pure-Python twin of the two hot parts (``GroupIndex``, ``RuleSet``).
"""
