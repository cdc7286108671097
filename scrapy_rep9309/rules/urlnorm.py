"""Percent-encoding normalisation of RFC 9309 section 2.2.2, applied alike to URLs and patterns.

Both sides of a comparison go through the same function, so ``/a%62c``, ``/abc`` and
``/%61bc`` are one path, ``/ツ`` and ``/%E3%83%84`` are one path, and ``%2f`` equals
``%2F``. Everything here works on octets: text is UTF-8 encoded first, and bytes that
are not valid UTF-8 are simply percent-encoded octets.
"""

from __future__ import annotations

import re

#: Characters RFC 3986 lets a URL carry as they are; ``*`` and ``$`` are left out on
#: purpose because they mean something in patterns, so in URLs they become ``%2A`` and
#: ``%24`` (and a pattern's ``%2A`` then matches a URL's literal ``*``).
KEPT_AS_IS = "A-Za-z0-9\\-._~:/?#\\[\\]@!&'()+,;="

_NEEDS_NORMALISING = re.compile(f"[^{KEPT_AS_IS}]")
_ESCAPE_OR_UNSAFE_OCTET = re.compile(f"%([0-9A-Fa-f]{{2}})|[^{KEPT_AS_IS}]".encode("ascii"))
#: What normalising would change: a "%" not followed by two upper-case hex digits (a
#: lower-case escape, or a "%" that starts none), an escape of an unreserved octet
#: (digits, letters, "-", ".", "_", "~"), any other octet not kept as is. Most escaped
#: URLs have none of these, and are then normalised by one search.
_CHANGED_BY_NORMALISING = re.compile(
    f"%(?![0-9A-F]{{2}})|%(?:3[0-9]|4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|2[DE]|5F|7E)"
    f"|[^%{KEPT_AS_IS}]".encode("ascii")
)
_UNRESERVED_OCTETS = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
_PATH_START = re.compile("[/?;]")
_CLEAN_HTTP_URL = re.compile(f"https?://[^/?;#]*(/[{KEPT_AS_IS.replace('#', '')}]*)(?:#|\\Z)")
#: Match an ``http[s]://host/path`` URL whose path and query need no normalisation;
#: group 1 is then the path and query. Callers on hot paths use it before
#: :func:`normalised_path` to save a call.
clean_http_url = _CLEAN_HTTP_URL.match


def _normalise_match(match: re.Match[bytes]) -> bytes:
    hex_digits = match.group(1)
    if hex_digits is None:
        return b"%%%02X" % match.group(0)[0]
    octet = int(hex_digits, 16)
    if octet in _UNRESERVED_OCTETS:
        return bytes((octet,))
    return b"%" + hex_digits.upper()


def normalise_octets(data: bytes) -> str:
    """Return ``data`` percent-encoded the canonical way, as an ASCII string.

    Unreserved characters written as ``%XX`` are decoded, other ``%XX`` escapes get
    upper-case hex digits, and every octet outside the kept set (non-ASCII, controls,
    space, ``*``, ``$``, a ``%`` that starts no escape, ...) becomes ``%XX``.
    """
    if _CHANGED_BY_NORMALISING.search(data) is None:
        return data.decode("ascii")
    return _ESCAPE_OR_UNSAFE_OCTET.sub(_normalise_match, data).decode("ascii")


def normalise_text(text: str) -> str:
    """Like :func:`normalise_octets` for text, with a fast path for already-clean strings."""
    if _NEEDS_NORMALISING.search(text) is None:
        return text
    return normalise_octets(utf8_octets(text))


def utf8_octets(text: str) -> bytes:
    """Encode ``text`` as UTF-8 without ever failing.

    Surrogate escapes (from ``bytes.decode(..., "surrogateescape")``) give back their
    original octets; any other lone surrogate is encoded as its three (invalid) octets.
    """
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _http_path_start(url: str) -> int:
    """Where the path of an ``http[s]://host/...`` URL starts (its end for ``http[s]://host``,
    whose path is empty); -1 for any other shape."""
    if url.startswith("https://"):
        authority_start = 8
    elif url.startswith("http://"):
        authority_start = 7
    else:
        return -1
    slash = url.find("/", authority_start)
    if slash < 0:
        slash = len(url)
    authority = url[authority_start:slash]
    if "?" in authority or ";" in authority or "#" in authority:
        return -1
    return slash


def normalised_path(url: str) -> str:
    """Return :func:`path_and_query` of ``url``, normalised as :func:`normalise_text` does.

    One regular-expression match serves the usual ``http[s]://host/clean/path`` case.
    """
    match = clean_http_url(url)
    if match is not None:
        return match.group(1)
    return normalise_text(path_and_query(url))


def path_and_query(url: str) -> str:
    """Return the path, parameters and query of ``url`` (no fragment), always starting with ``/``.

    ``url`` may be absolute (``https://host/p?q``), scheme-relative (``//host/p``) or just
    ``/p?q``. Without any path the result is ``/``, as RFC 9309 matches from the first
    octet of the path.
    """
    fragment = url.find("#")
    if fragment >= 0:  # RFC 3986: the first "#" starts the fragment, wherever it is
        url = url[:fragment]
    if url[:1] == "/" and url[1:2] != "/":
        path_start = 0
    elif (path_start := _http_path_start(url)) < 0:
        search_start = 2 if url[:2] == "//" else 0
        scheme_end = url.find("://", search_start)
        if scheme_end >= 0:
            early_path = _PATH_START.search(url, search_start, scheme_end)
            authority_start = search_start if early_path is not None else scheme_end + 3
        else:
            authority_start = search_start
        authority_end = _PATH_START.search(url, authority_start)
        if authority_end is None:
            return "/"
        path_start = authority_end.start()
    path = url[path_start:]
    return path if path[:1] == "/" else "/" + path
