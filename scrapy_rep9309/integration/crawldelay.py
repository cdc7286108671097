"""Turn an origin's ``Crawl-delay`` into the minimum delay of its download slot."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Downloader, Slot


def _slot_for(downloader: Downloader, request: Request) -> Slot:
    key = downloader.get_slot_key(request)
    slot = downloader.slots.get(key)
    if slot is None:  # not created yet, or garbage-collected after being idle
        _, slot = downloader._get_slot(request)
    return slot


def raise_slot_delay(downloader: Downloader, request: Request, delay: float) -> None:
    """Make the delay of the slot ``request`` will use at least ``delay`` seconds.

    Never lowers it: DOWNLOAD_DELAY, DOWNLOAD_SLOTS and AutoThrottle may ask for more.
    Called for every allowed request, so a slot recreated after garbage
    collection (or lowered by AutoThrottle) gets the delay back.
    """
    if delay <= 0:
        return
    slot = _slot_for(downloader, request)
    if slot.delay < delay:
        slot.delay = delay
