"""What each robots.txt request carries: control meta, proxy, REP9309_FETCH_META, timeout."""

from __future__ import annotations

from scrapy_rep9309.integration.fetch import ROBOTS_REQUEST_META, SIZE_BUDGET_META, robots_request

URL = "https://a.example/robots.txt"
PROXY = "http://proxy.example:3128"


def test_control_meta_and_size_budget() -> None:
    request = robots_request(URL, 512000)
    assert ROBOTS_REQUEST_META.items() <= request.meta.items()
    assert request.meta[SIZE_BUDGET_META].limit == 512000
    assert "proxy" not in request.meta
    assert "download_timeout" not in request.meta  # the crawl's DOWNLOAD_TIMEOUT applies


def test_extra_meta_is_merged() -> None:
    request = robots_request(URL, 512000, extra_meta={"playwright": False, "cookiejar": 2})
    assert request.meta["playwright"] is False
    assert request.meta["cookiejar"] == 2
    assert request.meta["dont_obey_robotstxt"] is True


def test_extra_meta_proxy_overrides_the_triggering_requests_proxy() -> None:
    direct = robots_request(URL, 512000, proxy=PROXY, extra_meta={"proxy": None})
    assert "proxy" in direct.meta and direct.meta["proxy"] is None
    other = robots_request(URL, 512000, proxy=PROXY, extra_meta={"proxy": "http://p2:8080"})
    assert other.meta["proxy"] == "http://p2:8080"
    assert robots_request(URL, 512000, proxy=PROXY).meta["proxy"] == PROXY


def test_timeout_becomes_download_timeout() -> None:
    assert robots_request(URL, 512000, timeout=2.5).meta["download_timeout"] == 2.5


def test_each_request_gets_its_own_meta_and_budget() -> None:
    extra = {"playwright": False}
    first = robots_request(URL, 512000, extra_meta=extra)
    second = robots_request(URL, 512000, extra_meta=extra)
    first.meta["playwright"] = True
    assert second.meta["playwright"] is False and extra["playwright"] is False
    assert first.meta[SIZE_BUDGET_META] is not second.meta[SIZE_BUDGET_META]
