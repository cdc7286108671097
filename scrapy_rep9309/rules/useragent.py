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
#: RFC 9110 section 5.6.2: ``tchar``, what an HTTP token (and so a product's name) is made of.
_TCHARS = r"!#$%&'*+\-.^_`|~0-9A-Za-z"
#: The item's whole name, up to its version, the next item or the comment's end: cut at
#: the first character that is no ``tchar`` instead, ``(compatible; Bötbot/1.0)`` would
#: name the crawler ``B`` (a name with such a character is judged by ``token_problem``).
_COMPATIBLE = re.compile(r"[(;]\s*compatible\s*;\s*([^\s;/()]+)", re.IGNORECASE)
#: RFC 9110 section 10.1.5: ``User-Agent = product *( RWS ( product / comment ) )`` with
#: ``product = token [ "/" product-version ]``; a comment right after the token is
#: tolerated (``MyBot(+https://x)``).
_LEADING_PRODUCT = re.compile(rf"\s*([{_TCHARS}]+)(?=[/\s(]|\Z)")
#: A product version or a comment: what tells a whole header from words such as ``Foo Bar``.
_HEADER_MARK = re.compile(r"[/(]")

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


def product_token(user_agent: str) -> str | None:
    """Return the product token a crawler identifies itself with, as written.

    The rule, in order:

    1. an item ``compatible;`` in a parenthesised comment (first or not) names the token
       right after it (``Mozilla/5.0 (compatible; MyBot/1.0; +https://x)`` -> ``MyBot``,
       and Googlebot's UAs, ``(KHTML, like Gecko; compatible; Googlebot/2.1; ...)``, ->
       ``Googlebot``);
    2. otherwise a single name (``MyBot``) is the token, and a whole header, one with
       a product version or a comment somewhere, is read as RFC 9110 reads a
       ``User-Agent``: its first product's name is the token (``MyBot/1.0 (+https://x)``
       and ``MyBot (info)`` -> ``MyBot``; ``FigTree Robot libwww-perl/5.04`` ->
       ``FigTree``; ``Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)`` ->
       ``Slackbot-LinkExpanding``);
    3. ``None`` for anything else (``""``, ``/1.0``, ``MyBot;1.0``), and for several
       bare words (``Foo Bar``): as in Google's library, whose test
       ``GoogleOnly_AcceptUserAgentUpToFirstSpace`` has ``Foo Bar`` match no group,
       they are no product token and no header either.

    A name is an HTTP token: it may hold characters (``MJ12bot``, ``Bot2000``) that RFC
    9309 forbids in a product token; see :func:`token_problem`.
    """
    compatible = _COMPATIBLE.search(user_agent)
    if compatible is not None:
        return compatible.group(1)
    leading = _LEADING_PRODUCT.match(user_agent)
    if leading is None:
        return None
    if user_agent[leading.end() :].strip() and _HEADER_MARK.search(user_agent) is None:
        return None
    return leading.group(1)


@lru_cache(maxsize=256)
def crawler_token(user_agent: str) -> str:
    """Return the lower-cased :func:`product_token` of ``user_agent``, the key groups are found by.

    Without a product token the whole string is kept (lower-cased): it is no valid
    product token, so only the ``*`` group can apply, as with a token such as
    ``mj12bot`` that RFC 9309 does not allow.
    """
    token = product_token(user_agent)
    return (user_agent if token is None else token).lower()


def token_problem(user_agent: str) -> str | None:
    """Say, in a sentence, why no ``User-agent:`` group can ever name ``user_agent``.

    ``None`` when its product token is valid (RFC 9309 2.2.1: letters, ``_`` and ``-``
    only). Otherwise groups written for the crawler are ignored and only ``*`` groups
    apply to it, silently: a crawler should say so once, when it starts.
    """
    token = product_token(user_agent)
    if token is None:
        return (
            f"the user agent {user_agent!r} has no product token: it is neither a name "
            "(letters, '_' and '-') nor a User-Agent header starting with one "
            "('Name/1.0 (+https://...)'), so no robots.txt group can name this crawler, "
            "only 'User-agent: *' groups apply to it"
        )
    if is_product_token(token):
        return None
    others = ", ".join(map(repr, dict.fromkeys(c for c in token if not is_product_token(c))))
    return (
        f"the product token {token!r} of the user agent {user_agent!r} contains {others}: "
        "RFC 9309 2.2.1 allows only letters, '_' and '-' in a product token, so "
        f"robots.txt groups written for {token!r} never apply to this crawler, only "
        "'User-agent: *' groups do; use a token made of letters, '_' and '-'"
    )
