"""Origin keys: scheme, IDNA host and port with defaults filled in (RFC 9309 2.3)."""

from __future__ import annotations

import pytest

from scrapy_rep9309.policy.origin import Origin


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://a.com/x", "http://a.com"),
        ("http://a.com:80/x", "http://a.com"),
        ("HTTP://A.COM/", "http://a.com"),
        ("http://a.com./", "http://a.com"),
        ("https://a.com/x?y#z", "https://a.com"),
        ("https://a.com:443", "https://a.com"),
        ("http://a.com:8080/", "http://a.com:8080"),
        ("https://a.com:80/", "https://a.com:80"),
        ("http://user:pw@a.com/", "http://a.com"),
        ("http://Bücher.example/", "http://xn--bcher-kva.example"),
        ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example"),
        ("http://127.0.0.2:8000/", "http://127.0.0.2:8000"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
        ("http://[0:0::1]/", "http://[::1]"),
        ("http://under_score.example/", "http://under_score.example"),
        # Percent-encoded octets of a host name are decoded, as browsers and proxies do.
        ("http://%64eny.example/b", "http://deny.example"),
        ("http://deny%2Eexample/c", "http://deny.example"),
        # An IPv6 literal's zone id is kept as written (a reviewer: decoded, a key of
        # digits did not parse back, and a saved request of it was dropped on a resume).
        ("http://[fe80::1%2512]/", "http://[fe80::1%2512]"),
        ("http://[fe80::1%25eth0]/", "http://[fe80::1%25eth0]"),
    ],
)
def test_origin_key(url: str, expected: str) -> None:
    origin = Origin.from_url(url)
    assert origin is not None
    assert str(origin) == expected
    assert origin.robots_url == f"{expected}/robots.txt"
    assert Origin.from_url(str(origin)) == origin, "a key parses back (JOBDIR, Redis)"


def test_same_origin_for_default_port() -> None:
    assert Origin.from_url("http://a.com/") == Origin.from_url("http://a.com:80/b")
    assert Origin.from_url("http://a.com/") != Origin.from_url("https://a.com/")
    assert Origin.from_url("http://a.com/") != Origin.from_url("http://a.com:8080/")


def test_fields() -> None:
    assert Origin.from_url("https://A.com/") == Origin("https", "a.com", 443)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://a.com/",
        "data:text/plain,hello",
        "file:///etc/passwd",
        "http:///path",
        "http://a..com/",
        "http://a com/",
        "http://a.com:99999/",
        "http://a.com:port/",
        "http://[::zz]/",
        "http://" + "a" * 64 + ".com/",
        "http://\udcff.com/",
        "mailto:someone@a.com",
    ],
)
def test_invalid_urls_have_no_origin(url: str) -> None:
    assert Origin.from_url(url) is None
