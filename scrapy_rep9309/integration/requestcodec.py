"""Requests as bytes, the way Scrapy's disk queues store them, for stores that keep
held requests outside the process (callbacks and errbacks restored by name)."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING

from scrapy.utils.request import request_from_dict

if TYPE_CHECKING:
    from scrapy import Request, Spider


class RequestCodec:
    """``Request.to_dict`` pickled; raises ValueError (or a pickling error) for a request
    that cannot be serialised, e.g. with a lambda callback."""

    def __init__(self, spider: Spider | None) -> None:
        self.spider = spider

    def encode(self, request: Request) -> bytes:
        return pickle.dumps(request.to_dict(spider=self.spider), protocol=4)

    def decode(self, data: bytes) -> Request:
        return request_from_dict(pickle.loads(data), spider=self.spider)
