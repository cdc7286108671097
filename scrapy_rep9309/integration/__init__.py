"""The Scrapy integration: the downloader middleware, the robots.txt fetcher, settings,
the add-on, the ``RobotParser`` interface and the ``scrapy robots`` command."""
