"""Product tokens (RFC 9309 section 2.2.1): from a ``User-agent:`` line and from a caller's UA.

Groups and crawlers are compared by product token only, case-insensitively and by
equality: never by substring, so ``User-agent: org`` does not apply to
``Scrapy/2.19 (+https://scrapy.org)``.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: What RFC 9309 and Google's library accept in a product token.
_TOKEN = re.compile(r"[A-Za-z_-]*")
_COMPATIBLE = re.compile(r"[(;]\s*compatible\s*;\s*([A-Za-z_-]+)", re.IGNORECASE)
_LEADING_PRODUCT = re.compile(r"\s*([A-Za-z_-]+)(?:/|\s*\(|$)")

GLOBAL_TOKEN = "*"
_ASCII_WHITESPACE = " \t\n\v\f\r"


def group_token(value: str) -> str:
    """Return the lower-cased token a ``User-agent:`` value names (``*`` for the global group).

    The value is cut to its leading run of ``[A-Za-z_-]``, as Google does: ``googlebot/1.2``
    and ``googlebot*`` mean ``googlebot``, ``Foo Bar`` means ``foo``. A ``*`` alone or
    followed by whitespace names the global group. A value with no token gives ``""``,
    which no crawler matches.
    """
    if value[:1] == "*" and (len(value) == 1 or value[1] in _ASCII_WHITESPACE):
        return GLOBAL_TOKEN
    match = _TOKEN.match(value)
    return match.group(0).lower() if match else ""


def is_product_token(token: str) -> bool:
    """Whether ``token`` is a non-empty run of ``[A-Za-z_-]``, as product tokens are."""
    return _TOKEN.fullmatch(token) is not None and token != ""


@lru_cache(maxsize=256)
def crawler_token(user_agent: str) -> str:
    """Return the lower-cased product token a crawler identifies itself with.

    The rule, in order:

    1. an item ``compatible;`` in a parenthesised comment (first or not) names the token
       right after it (``Mozilla/5.0 (compatible; MyBot/1.0; +https://x)`` -> ``mybot``,
       and Googlebot's UAs, ``(KHTML, like Gecko; compatible; Googlebot/2.1; ...)``, ->
       ``googlebot``);
    2. otherwise a leading product ``Token/version`` or ``Token (comment)`` gives its
       token (``MyBot/1.0 (+https://x)`` -> ``mybot``), and so does a bare token
       (``MyBot``);
    3. anything else (``Foo Bar``, ``""``) is kept whole; it equals no group's token, so
       only the ``*`` group can apply.
    """
    compatible = _COMPATIBLE.search(user_agent)
    if compatible is not None:
        return compatible.group(1).lower()
    leading = _LEADING_PRODUCT.match(user_agent)
    if leading is not None:
        return leading.group(1).lower()
    return user_agent.lower()
