"""Turn an origin's ``Crawl-delay`` into the minimum delay of its download slot."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from scrapy.core.downloader import Downloader

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.core.downloader import Slot

#: Whether ``Downloader._get_slot`` requires the spider (Scrapy 2.13); later versions
#: make it optional and warn when it is given.
_GET_SLOT_NEEDS_SPIDER = (
    inspect.signature(Downloader._get_slot).parameters["spider"].default is inspect.Parameter.empty
)


def _slot_for(downloader: Downloader, request: Request, spider: Spider | None) -> Slot:
    key = downloader.get_slot_key(request)
    slot = downloader.slots.get(key)
    if slot is None:  # not made yet (a download_slot of its own), or collected after idling
        if _GET_SLOT_NEEDS_SPIDER:
            _, slot = downloader._get_slot(request, spider)
        else:
            _, slot = downloader._get_slot(request)
    return slot


def raise_slot_delay(
    downloader: Downloader, request: Request, delay: float, spider: Spider | None = None
) -> None:
    """Make the delay of the slot ``request`` will use at least ``delay`` seconds.

    Never lowers it: DOWNLOAD_DELAY, DOWNLOAD_SLOTS and AutoThrottle may ask for more.
    Called for every allowed request, so a slot recreated after garbage
    collection (or lowered by AutoThrottle) gets the delay back. A slot that does not
    exist yet is made here, as the downloader would make it for ``request`` next.
    """
    if delay <= 0:
        return
    slot = _slot_for(downloader, request, spider)
    if slot.delay < delay:
        slot.delay = delay
