"""Settings of the scrapy-rep9309 demo project.

The plugin is enabled the recommended way, with its add-on. Every REP9309_
option is listed with its default; the few set here are tuned so the demo
finishes in seconds (a short retry delay), not by switching anything off.
"""

BOT_NAME = "demo_project"

SPIDER_MODULES = ["demo_project.spiders"]
NEWSPIDER_MODULE = "demo_project.spiders"

# Obey robots.txt. The plugin requires this; with ROBOTSTXT_OBEY = False it
# stays disabled (try `scrapy crawl demo -s ROBOTSTXT_OBEY=False`).
ROBOTSTXT_OBEY = True

# Recommended: the add-on. It removes Scrapy's built-in RobotsTxtMiddleware
# and puts scrapy_rep9309.RobotsTxtMiddleware in its place.
ADDONS = {"scrapy_rep9309.Addon": 0}

# Equivalent, without the add-on: swap the middlewares yourself.
# DOWNLOADER_MIDDLEWARES = {
#     "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
#     "scrapy_rep9309.RobotsTxtMiddleware": 100,
# }

# Which robots.txt middleware the demo spider runs with: "rep9309" (this
# plugin, as configured above) or "builtin" (Scrapy's own, for comparison:
# `scrapy crawl demo -s DEMO_MIDDLEWARE=builtin`). Read by the demo spider only.
DEMO_MIDDLEWARE = "rep9309"

# Items of pages whose usage preferences refuse AI training (train-ai=n in
# response.meta["rep9309_content_usage"]) are dropped: see pipelines.py.
ITEM_PIPELINES = {"demo_project.pipelines.DropRefusedTraining": 300}

# Product token to obey; default: taken from the User-Agent the request is sent
# with (its header, else DEFAULT_REQUEST_HEADERS, else USER_AGENT).
# ROBOTSTXT_USER_AGENT = None

# --- scrapy-rep9309 options (defaults shown) ---
# Seconds a fetched robots.txt is used before it is fetched again
# (Cache-Control max-age / no-store may shorten it).
# REP9309_CACHE_TTL = 86400
# Bytes of robots.txt parsed; the download stops there. At least 512000.
# REP9309_MAX_SIZE = 512000
# Redirect hops followed for robots.txt, across hosts; more: "unavailable".
# REP9309_MAX_REDIRECTS = 5
# Seconds before refetching an unreachable robots.txt (429, 5xx, network
# errors); doubles after each failure, up to REP9309_RETRY_MAX_DELAY.
# Default 60 and 3600; the demo's news site recovers after three 503s, so
# short values keep the demo under a minute.
REP9309_RETRY_DELAY = 0.5
REP9309_RETRY_MAX_DELAY = 4
# Longest a request waits for its origin's robots.txt before going to its
# errback with IgnoreRequest. Default 3600.
REP9309_DEFER_TIMEOUT = 30
# How long an expired copy keeps being used while refreshes find the origin
# unreachable (RFC 9309 2.3.1.4).
# REP9309_STALE_TTL = 2592000
# Origins whose rules are kept in memory (least recently used evicted).
# REP9309_CACHE_SIZE = 10000
# Honour Crawl-delay as a minimum download delay per origin, capped.
# REP9309_CRAWL_DELAY = False
# REP9309_CRAWL_DELAY_MAX = 60
# Usage labels the crawl needs: pages whose robots.txt preference for one of
# them is "n" are not downloaded (try -s REP9309_REQUIRE_USAGE=train-ai).
# REP9309_REQUIRE_USAGE = []
# Purpose tokens whose robots.txt groups must allow a page too.
# REP9309_EXTRA_USER_AGENTS = []

# Per-request robots.txt decisions are logged at DEBUG; INFO keeps the demo readable.
LOG_LEVEL = "INFO"
TELNETCONSOLE_ENABLED = False
