"""Demo Scrapy project for scrapy-rep9309 (see ``scrapy crawl demo``)."""
