"""Parse the two response headers that bound how long a robots.txt answer lasts.

``Cache-Control`` (RFC 9111 section 5.2.2) may shorten the cache lifetime of a
robots.txt (RFC 9309 section 2.4 allows standard cache control), and
``Retry-After`` (RFC 9110 section 10.2.3) says when an unreachable server wants
to be asked again. Both come from servers, so malformed values are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class CacheDirectives:
    """What a response allows: ``max_age`` seconds (None: no limit given), ``no_store``."""

    max_age: float | None = None
    no_store: bool = False


#: The longest ``Retry-After`` waited for: 30 days, the time after which RFC 9309 2.3.1.4
#: lets a crawler stop treating an unreachable robots.txt as a complete disallow. A
#: server asking for longer (or for a date centuries away) gets its robots.txt asked
#: again then.
RETRY_AFTER_LIMIT = 30 * 86400.0


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def parse_cache_control(values: list[str | bytes] | str | bytes | None) -> CacheDirectives:
    """Directives of one or more ``Cache-Control`` header values.

    ``no-cache`` (reuse only after revalidation) counts as ``no-store``: this
    client never revalidates. When ``max-age`` repeats, the shortest wins.
    """
    if values is None:
        return CacheDirectives()
    if isinstance(values, (str, bytes)):
        values = [values]
    max_age: float | None = None
    no_store = False
    for value in values:
        for directive in _text(value).split(","):
            name, _, argument = directive.strip().partition("=")
            name = name.strip().lower()
            if name in ("no-store", "no-cache"):
                no_store = True
            elif name == "max-age":
                seconds = _delta_seconds(argument)
                if seconds is not None and (max_age is None or seconds < max_age):
                    max_age = seconds
    return CacheDirectives(max_age=max_age, no_store=no_store)


def parse_retry_after(value: str | bytes | None, now: float) -> float | None:
    """Seconds to wait from ``now`` (a Unix time), or None if absent or malformed; at
    most RETRY_AFTER_LIMIT."""
    if value is None:
        return None
    text = _text(value).strip()
    seconds = _delta_seconds(text)
    if seconds is None:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are always GMT
            return None
        seconds = max(0.0, when.timestamp() - now)
    return min(seconds, RETRY_AFTER_LIMIT)


def _delta_seconds(text: str) -> float | None:
    text = text.strip().strip('"')
    if not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(int(RETRY_AFTER_LIMIT))):  # past the limit (and past a float)
        return RETRY_AFTER_LIMIT
    return float(int(digits))
