"""A stats collector that only counts: for unit tests of parts that take ``crawler.stats``."""

from __future__ import annotations


class CountingStats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count
