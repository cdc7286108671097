"""Turn an origin's ``Crawl-delay`` into the minimum gap between two requests of its
download slot.

Scrapy spaces a slot's requests by its ``delay``, drawn at random between (1 - jitter)
and (1 + jitter) times it (``DOWNLOAD_DELAY_JITTER``, 0.5 by default; before Scrapy 2.19
``RANDOMIZE_DOWNLOAD_DELAY``: 0.5 to 1.5 times), and AutoThrottle lowers the delay after
every response. So raising the delay once is not enough: the jitter is narrowed until its
shortest draw is the Crawl-delay, and the delay is raised again after every response of
the slot, after AutoThrottle's adjustment.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader import Downloader

from scrapy_rep9309.storage.lru import LRUCache

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.core.downloader import Slot
    from scrapy.http import Response

#: Whether ``Downloader._get_slot`` requires the spider (Scrapy 2.13); later versions
#: make it optional and warn when it is given.
_GET_SLOT_NEEDS_SPIDER = (
    inspect.signature(Downloader._get_slot).parameters["spider"].default is inspect.Parameter.empty
)
#: Shortest draw of ``RANDOMIZE_DOWNLOAD_DELAY`` (Scrapy < 2.19), as a share of the delay.
_RANDOMIZED_SHORTEST = 0.5


def _slot_for(downloader: Downloader, key: str, request: Request, spider: Spider | None) -> Slot:
    """The slot ``request`` will use (``key`` is its slot key)."""
    slot = downloader.slots.get(key)
    if slot is None:  # not made yet (a download_slot of its own), or collected after idling
        if _GET_SLOT_NEEDS_SPIDER:
            _, slot = downloader._get_slot(request, spider)
        else:
            _, slot = downloader._get_slot(request)
    return slot


def keep_minimum_gap(slot: Slot, minimum: float) -> None:
    """Make every gap ``slot`` draws at least ``minimum`` seconds.

    Never lowers the delay (DOWNLOAD_DELAY, DOWNLOAD_SLOTS and AutoThrottle may ask for
    more); narrows the jitter only as far as the minimum needs."""
    if slot.delay < minimum:
        slot.delay = minimum
    jitter = getattr(slot, "jitter", None)
    if jitter is None:  # Scrapy < 2.19: randomize_delay, 0.5 to 1.5 times the delay
        if slot.randomize_delay and slot.delay * _RANDOMIZED_SHORTEST < minimum:
            slot.randomize_delay = False
        return
    if jitter and slot.delay * (1 - jitter) < minimum:
        slot.jitter = max(0.0, 1 - minimum / slot.delay)


class CrawlDelayKeeper:
    """Keeps each download slot's requests at least their origins' Crawl-delay apart.

    ``raise_for`` is called for every allowed request, so a slot recreated after garbage
    collection gets the delay back; it remembers the largest Crawl-delay met per slot (two
    origins may share one: the same host on two ports, one IP with
    CONCURRENT_REQUESTS_PER_IP, a ``download_slot``). ``response_downloaded`` raises the
    slot's delay back after every response of the slot, whichever request it answers:
    connected after AutoThrottle (extensions connect first), it has the last word before
    the slot sends its next request."""

    def __init__(self, downloader: Downloader, slots_kept: int) -> None:
        self._downloader = downloader
        #: Slot key -> the largest Crawl-delay of the requests it sent (bounded like the
        #: robots.txt cache; a slot dropped here gets its delay back at its next request).
        self._minimums: LRUCache[str, float] = LRUCache(slots_kept)

    def raise_for(self, request: Request, delay: float, spider: Spider | None = None) -> None:
        """Keep the slot ``request`` will use at least ``delay`` seconds between requests.
        A slot that does not exist yet is made here, as the downloader would make it for
        ``request`` next."""
        if delay <= 0:
            return
        key = self._downloader.get_slot_key(request)
        minimum = max(delay, self._minimums.get(key) or 0.0)
        self._minimums.put(key, minimum)
        keep_minimum_gap(_slot_for(self._downloader, key, request, spider), minimum)

    def response_downloaded(self, response: Response, request: Request, **kwargs: Any) -> None:
        key = self._downloader.get_slot_key(request)
        minimum = self._minimums.get(key)
        if minimum is None:
            return
        slot = self._downloader.slots.get(key)
        if slot is not None:
            keep_minimum_gap(slot, minimum)
