"""Requests waiting for robots.txt are held outside the downloader, intact."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest
from scrapy import Request, Spider, signals
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.http import Response
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

from tests._readme import undocumented_stats
from tests.crawl import (
    BUILTIN_ENABLED,
    OURS_ENABLED,
    CrawlResult,
    Failed,
    PlanSpider,
    Wait,
    run_crawl,
)
from tests.servers import Reply, ScriptedOrigin, ServerPool, hang, redirect, rules

SLOW_ROBOTS_DELAY = 5.0
HEAD_OF_LINE_SETTINGS = {"CONCURRENT_REQUESTS": 4, "DOWNLOAD_TIMEOUT": 8}


async def _crawl_behind_a_slow_origin(
    servers: ServerPool, enable: dict[str, Any] | None = None
) -> tuple[CrawlResult, ScriptedOrigin, list[ScriptedOrigin]]:
    """12 requests to a slow origin first, then 5 fast origins of 6 pages."""
    slow = servers.add(rules("User-agent: *\nDisallow: /private\n", delay=SLOW_ROBOTS_DELAY))
    fast = [servers.add(page_delay=0.02) for _ in range(5)]
    plan = slow.urls([f"/page/{n}" for n in range(11)] + ["/private/1"])
    plan += [site.url(f"/page/{n}") for site in fast for n in range(6)]
    kwargs = {} if enable is None else {"enable": enable}
    result = await run_crawl(plan, HEAD_OF_LINE_SETTINGS, **kwargs)
    return result, slow, fast


def _last_response_from(result: CrawlResult, sites: list[ScriptedOrigin]) -> float:
    bases = tuple(site.base + "/" for site in sites)
    return max(seen.time for seen in result.responses if seen.url.startswith(bases))


@deferred_f_from_coro_f
async def test_slow_robots_txt_does_not_stall_other_origins(servers: ServerPool) -> None:
    result, slow, fast = await _crawl_behind_a_slow_origin(servers)

    answered = slow.robots_fetches[0].answered
    assert answered is not None
    assert all(len(site.page_requests) == 6 for site in fast)
    assert _last_response_from(result, fast) < answered
    # The slow origin's requests still went on once its robots.txt arrived.
    assert len(slow.page_requests) == 11
    assert result.forbidden_urls == {slow.url("/private/1")}
    assert min(entry.received for entry in slow.page_requests) >= answered


@deferred_f_from_coro_f
async def test_builtin_stalls_behind_a_slow_robots_txt(servers: ServerPool) -> None:
    """Documented contrast: Scrapy's middleware waits inside the downloader."""
    result, slow, fast = await _crawl_behind_a_slow_origin(servers, BUILTIN_ENABLED)

    answered = slow.robots_fetches[0].answered
    assert answered is not None
    assert _last_response_from(result, fast) > answered


@deferred_f_from_coro_f
async def test_held_requests_keep_priority_meta_and_callbacks(servers: ServerPool) -> None:
    site = servers.add(rules("User-agent: *\nAllow: /\n", delay=0.5))
    calls: list[tuple[str, int, str, dict[str, Any]]] = []

    def parse_tagged(response: Response, **kwargs: Any) -> None:
        request = response.request
        assert request is not None
        calls.append((response.url, request.priority, request.meta["tag"], kwargs))

    priorities = [1, 5, 3, 4, 2]
    plan = [
        Request(
            site.url(f"/page/{priority}"),
            priority=priority,
            meta={"tag": f"t{priority}"},
            cb_kwargs={"number": priority},
            callback=parse_tagged,
        )
        for priority in priorities
    ]

    result = await run_crawl(plan, {"CONCURRENT_REQUESTS": 1})

    assert result.failures == []
    assert sorted(calls) == sorted(
        (site.url(f"/page/{p}"), p, f"t{p}", {"number": p}) for p in priorities
    )
    # Released together: the scheduler hands them out highest priority first.
    downloaded = [entry.path for entry in site.page_requests]
    assert downloaded == [f"/page/{p}" for p in sorted(priorities, reverse=True)]


@deferred_f_from_coro_f
async def test_held_requests_pass_the_duplicate_filter_once(servers: ServerPool) -> None:
    site = servers.add([Reply(503, "busy"), rules("User-agent: *\nAllow: /\n")])
    pages = site.urls([f"/page/{n}" for n in range(5)])

    result = await run_crawl([*pages, Wait(0.05), pages[0]], {"REP9309_RETRY_DELAY": 0.3})

    assert result.urls == set(pages)
    assert result.failures == []
    assert sorted(entry.path for entry in site.page_requests) == sorted(
        f"/page/{n}" for n in range(5)
    ), "held requests must come back once each; a true duplicate is still filtered"


@deferred_f_from_coro_f
async def test_an_expired_request_passes_the_duplicate_filter_too(servers: ServerPool) -> None:
    """A request whose defer time ran out ends in its errback, once: the same URL yielded
    again later is a duplicate, as it is for Scrapy's built-in middleware (which sends
    every request through the duplicate filter before deciding it). Expired copies used
    to skip the filter: the second one was held, and ended a second time."""
    site = servers.add(Reply(503, "busy"))
    page = site.url("/page")

    result = await run_crawl([page, Wait(1.5), page], {"REP9309_DEFER_TIMEOUT": 1})

    assert [failed.url for failed in result.failures] == [page]
    assert result.ignored_urls == {page}
    assert site.page_requests == []
    # Held before the filter sees it (as the duplicate of a released request is), the
    # second one expires too, and the filter drops it, without an errback.
    assert result.stat("robotstxt/deferred") == 2
    assert result.stat("robotstxt/deferred/expired") == 2
    assert result.stat("dupefilter/filtered") == 1


class _TriesAgainLater(PlanSpider):
    """Its errback tries a failed request once more, 2 s later, with a copy of it."""

    async def on_error(self, failure: Failure) -> Any:
        request = failure.request  # type: ignore[attr-defined]
        self.result.failures.append(Failed(request.url, failure.value, 0.0, request))
        if not request.meta.get("tried_again"):
            await asyncio.sleep(2)
            again = request.replace(dont_filter=True)
            again.meta["tried_again"] = True
            yield again


@deferred_f_from_coro_f
async def test_a_copy_of_an_expired_request_is_decided_again(servers: ServerPool) -> None:
    """The errback's copy of an expired request, yielded once robots.txt has answered,
    is decided by that answer. It used to carry the expired mark in its meta, and was
    dropped at once with the old reason, uncounted (found by a second reviewer)."""
    site = servers.add([Reply(503, "busy"), rules("User-agent: *\nAllow: /\n")])
    plan = [site.url("/a"), Wait(1.2), site.url("/b")]
    settings = {
        "REP9309_DEFER_TIMEOUT": 1,
        "REP9309_RETRY_DELAY": 1.5,
        "REP9309_RETRY_MAX_DELAY": 5,
    }

    result = await run_crawl(plan, settings, spider_cls=_TriesAgainLater)

    assert result.urls == {site.url("/a"), site.url("/b")}
    assert [failed.url for failed in result.failures] == [site.url("/a")]
    assert result.stat("robotstxt/deferred/expired") == 1
    assert sorted(entry.path for entry in site.page_requests) == ["/a", "/b"]


@deferred_f_from_coro_f
async def test_spider_stays_open_while_held_and_closes_promptly(servers: ServerPool) -> None:
    site = servers.add([Reply(503, "busy"), rules("User-agent: *\nAllow: /\n")])
    pages = site.urls([f"/page/{n}" for n in range(3)])

    result = await run_crawl(pages, {"REP9309_RETRY_DELAY": 1.0})

    assert result.urls == set(pages)
    assert result.close_reason == "finished"
    last_response = max(seen.time for seen in result.responses)
    assert last_response - result.started > 0.9
    assert result.spider_closed_at - last_response < 1.0


@deferred_f_from_coro_f
async def test_spider_closes_promptly_after_requests_expire(servers: ServerPool) -> None:
    site = servers.add(Reply(503, "busy"))
    pages = site.urls([f"/page/{n}" for n in range(3)])

    result = await run_crawl(pages, {"REP9309_DEFER_TIMEOUT": 1})

    assert result.ignored_urls == set(pages)
    assert result.close_reason == "finished"
    last_failure = max(failed.time for failed in result.failures)
    assert result.spider_closed_at - last_failure < 1.0


@deferred_f_from_coro_f
async def test_requests_whose_rules_expire_in_the_scheduler_are_requeued_not_lost(
    servers: ServerPool,
) -> None:
    """Scheduled while the rules were fresh, downloaded after they expired: held, then decided."""
    site = servers.add(
        [rules("User-agent: *\nDisallow: /b\n"), rules("User-agent: *\n")], page_delay=0.25
    )
    first = site.url("/page/0")
    queued = site.urls([f"/page/{n}" for n in range(1, 5)] + ["/b/1"])
    # One request in the downloader at a time: the others wait in the scheduler.
    settings = {"REP9309_CACHE_TTL": 0.5, "CONCURRENT_REQUESTS": 1}

    result = await run_crawl([first, Wait(0.2), *queued], settings)

    assert result.stat("robotstxt/requeued") >= 1
    assert len(site.robots_fetches) >= 2
    assert result.urls == {first, *queued}, "the refetched rules allow /b"
    assert result.failures == []
    assert result.stat("robotstxt/deferred") == (
        result.stat("robotstxt/deferred/released") + result.stat("robotstxt/deferred/expired")
    )
    assert undocumented_stats(set(result.stats)) == set()


@deferred_f_from_coro_f
async def test_requests_held_when_the_spider_closes_reach_their_errback(
    servers: ServerPool,
) -> None:
    site = servers.add(hang())
    pages = site.urls([f"/page/{n}" for n in range(3)])

    result = await run_crawl(pages, {"CLOSESPIDER_TIMEOUT": 1, "DOWNLOAD_TIMEOUT": 3})

    assert result.close_reason == "closespider_timeout"
    assert result.ignored_urls == set(pages)
    for page in pages:
        message = result.failure_for(page).message
        assert message == f"Spider closed before the robots.txt of {site.base} was known"
    assert result.stat("robotstxt/deferred/closed") == 3
    assert result.stat("robotstxt/deferred") == 3
    assert site.page_requests == []
    assert undocumented_stats(set(result.stats)) == set()


def _most_at_once(fetches: list[tuple[float, float]]) -> int:
    """The most intervals (received, answered) that overlap at one moment."""
    edges = sorted(
        [(received, 1) for received, _ in fetches] + [(answered, -1) for _, answered in fetches]
    )
    most = under_way = 0
    for _, change in edges:
        under_way += change
        most = max(most, under_way)
    return most


@pytest.mark.parametrize(("setting", "most"), [(2, 2), (None, 4), (16, 8)])
@deferred_f_from_coro_f
async def test_a_burst_of_new_origins_downloads_at_most_rep9309_concurrent_fetches_at_once(
    servers: ServerPool, setting: int | None, most: int
) -> None:
    """Held requests do not count against CONCURRENT_REQUESTS: REP9309_CONCURRENT_FETCHES
    bounds the robots.txt downloads a burst of new origins starts (half of
    CONCURRENT_REQUESTS by default)."""
    sites = [servers.add(rules("User-agent: *\nDisallow: /private\n", delay=0.3)) for _ in range(8)]
    plan = [site.url(f"/page/{n}") for n in range(3) for site in sites]
    plan += [sites[0].url("/private/1")]
    settings: dict[str, Any] = {"CONCURRENT_REQUESTS": 8}
    if setting is not None:
        settings["REP9309_CONCURRENT_FETCHES"] = setting
    result = await run_crawl(plan, settings)

    fetches = [(fetch.received, fetch.answered) for site in sites for fetch in site.robots_fetches]
    assert len(fetches) == 8 and all(answered is not None for _, answered in fetches)
    assert _most_at_once(fetches) == most  # type: ignore[arg-type]
    # Nothing lost, nothing unsafe: every page once, the forbidden one refused.
    assert all(len(site.page_requests) == 3 for site in sites)
    assert result.forbidden_urls == {sites[0].url("/private/1")}
    waited = [line for line in result.messages() if "waits for a download slot" in line]
    assert (len(waited) > 0) == (most < len(sites))


@deferred_f_from_coro_f
async def test_robots_txt_files_that_never_answer_do_not_fill_the_downloader(
    servers: ServerPool,
) -> None:
    """An origin crawled, then as many new origins as CONCURRENT_REQUESTS (16) whose
    robots.txt never answers, then more of the first origin's pages: robots.txt downloads
    take half of the downloader at most, so those pages are crawled while the others hang.
    Were the downloads allowed 16 places, the engine would take in nothing more until their
    DOWNLOAD_TIMEOUT, past the close."""
    known = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    hanging = [servers.add(hang()) for _ in range(16)]
    later = known.urls(["/page/1", "/page/2", "/private/1"])
    plan = [known.url("/page/0"), Wait(0.5), *(site.url("/page/0") for site in hanging)]
    plan += [Wait(0.5), *later]

    result = await run_crawl(plan, {"CLOSESPIDER_TIMEOUT": 4, "DOWNLOAD_TIMEOUT": 8})

    assert len(known.page_requests) == 3
    assert result.forbidden_urls == {known.url("/private/1")}
    assert sum(len(site.robots_fetches) for site in hanging) == 8
    assert result.ignored_urls == {site.url("/page/0") for site in hanging} | {
        known.url("/private/1")
    }
    assert result.stat("robotstxt/deferred/closed") == 16


@deferred_f_from_coro_f
async def test_a_robots_txt_still_waiting_for_a_download_slot_at_close_is_never_fetched(
    servers: ServerPool,
) -> None:
    """The one slot is taken by a robots.txt that never answers; the second origin's waits
    for it until the spider closes, is not fetched then, and its requests end in their
    errback with the closing reason like any held request."""
    hanging = servers.add(hang())
    waiting = servers.add()
    pages = hanging.urls(["/page/0", "/page/1"]) + waiting.urls(["/page/0", "/page/1"])

    result = await run_crawl(
        pages,
        {"CLOSESPIDER_TIMEOUT": 1, "DOWNLOAD_TIMEOUT": 3, "REP9309_CONCURRENT_FETCHES": 1},
    )

    assert result.close_reason == "closespider_timeout"
    assert waiting.robots_fetches == [] and waiting.page_requests == []
    assert result.ignored_urls == set(pages)
    for site in (hanging, waiting):
        for page in site.urls(["/page/0", "/page/1"]):
            message = result.failure_for(page).message
            assert message == f"Spider closed before the robots.txt of {site.base} was known"
    assert result.stat("robotstxt/deferred/closed") == 4
    assert result.messages(logging.ERROR) == []
    assert any("waits for a download slot" in line for line in result.messages())


class _OnlyTheFirstHost(OffsiteMiddleware):
    """A custom offsite policy: only the spider's ``first_host`` is on site."""

    def should_follow(self, request: Request, spider: Spider) -> bool:
        return urlparse_cached(request).hostname == spider.first_host  # type: ignore[attr-defined]


class _OnlyTheFirstHostPattern(OffsiteMiddleware):
    """The older way to customise it: Scrapy's ``should_follow``, another host pattern."""

    def get_host_regex(self, spider: Spider) -> re.Pattern[str]:
        return re.compile(rf"^{re.escape(spider.first_host)}$")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "policy", ["allowed_domains", "custom should_follow", "custom get_host_regex", "none"]
)
@deferred_f_from_coro_f
async def test_requests_the_offsite_middleware_drops_are_neither_held_nor_fetched_for(
    servers: ServerPool, policy: str
) -> None:
    """OffsiteMiddleware drops offsite requests in the same signal that holds requests:
    such a request is not held, and its origin's robots.txt is not fetched. Scrapy's
    own policy is skipped while the spider lists no allowed_domains; a subclass's is
    always asked, whether it overrides should_follow or get_host_regex."""
    site = servers.add(rules("User-agent: *\nAllow: /\n", delay=0.2))
    other = servers.add(rules("User-agent: *\nAllow: /\n", delay=0.2))
    assert site.host != other.host
    attributes: dict[str, Any] = {"first_host": site.host}
    settings: dict[str, Any] = {}
    if policy == "allowed_domains":
        attributes["allowed_domains"] = [site.host]
    elif policy.startswith("custom"):
        custom = _OnlyTheFirstHost if "should_follow" in policy else _OnlyTheFirstHostPattern
        middlewares = dict(OURS_ENABLED["DOWNLOADER_MIDDLEWARES"])
        middlewares[OffsiteMiddleware] = None
        middlewares[custom] = 50
        settings["DOWNLOADER_MIDDLEWARES"] = middlewares
    spider_cls = type("OffsiteSpider", (PlanSpider,), attributes)

    result = await run_crawl(
        [site.url("/page/1"), other.url("/page/1"), site.url("/page/2")],
        settings,
        spider_cls=spider_cls,
    )

    assert site.crawled_paths() == {"/page/1", "/page/2"}
    assert len(site.robots_fetches) == 1
    if policy == "none":
        assert other.crawled_paths() == {"/page/1"}
        assert result.stat("robotstxt/deferred") == 3
        assert result.stat("offsite/filtered") == 0
    else:
        assert other.robots_fetches == [] and other.page_requests == []
        assert result.stat("robotstxt/deferred") == 2
        assert result.stat("offsite/filtered") == 1
    assert result.failures == []


class CrawlsMoreWhenIdleSpider(PlanSpider):
    """Crawls one more request from a spider_idle receiver connected when the spider
    opens, so after the middleware's (which found nothing held and let the engine go
    on), once the plan is done: the usual "crawl more when idle" pattern."""

    more: str = ""
    sent = 0

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.connect_idle, signal=signals.spider_opened)
        return spider

    def connect_idle(self, spider: Spider) -> None:
        self.crawler.signals.connect(self.crawl_more, signal=signals.spider_idle)

    def crawl_more(self, spider: Spider) -> None:
        if not type(self).sent and (self.result.failures or self.result.responses):
            type(self).sent += 1
            self.crawler.engine.crawl(Request(self.more, callback=self.parse))


@pytest.mark.parametrize("origin", ["in-backoff", "new"])
@deferred_f_from_coro_f
async def test_a_request_crawled_by_a_later_spider_idle_receiver_is_not_closed_under(
    servers: ServerPool, origin: str
) -> None:
    """The request the later receiver crawls has no usable copy: its origin waits to
    retry a 503 (the first page expired meanwhile), or was never asked about. Held, it
    left the engine idle when it looked right after the signal, and the spider closed
    "finished" under it (found by a second reviewer); it is downloaded now."""
    site = servers.add([Reply(503), rules("User-agent: *\nDisallow: /x\n")])
    other = servers.add(rules("User-agent: *\nDisallow: /x\n"))
    more = site.url("/page/2") if origin == "in-backoff" else other.url("/page/2")
    CrawlsMoreWhenIdleSpider.more, CrawlsMoreWhenIdleSpider.sent = more, 0
    settings = {"REP9309_DEFER_TIMEOUT": 0.5, "REP9309_RETRY_DELAY": 0.8}

    result = await run_crawl([site.url("/page/1")], settings, spider_cls=CrawlsMoreWhenIdleSpider)

    assert CrawlsMoreWhenIdleSpider.sent == 1
    assert result.urls == {more}
    assert result.close_reason == "finished"
    assert result.stat("robotstxt/deferred/closed") == 0
    assert result.stat("robotstxt/deferred/expired") == 1  # page/1, before the retry


class CrawlsMoreWhenIdleWithinDomainsSpider(CrawlsMoreWhenIdleSpider):
    allowed_domains: list[str] = []


@pytest.mark.parametrize("origin", ["known", "new"])
@deferred_f_from_coro_f
async def test_the_redirects_of_a_request_crawled_when_idle_are_filtered(
    servers: ServerPool, origin: str
) -> None:
    """A request the later spider_idle receiver crawls to a new origin is sent back to be
    held with ``dont_filter=True`` (the duplicate filter has seen it); it gets its own
    back once let through. Kept, its redirect inherited it: a page crawled already was
    fetched again, and an offsite one was fetched (found by a second reviewer). "known":
    the same crawl with the origin's robots.txt already read, for comparison."""
    site = servers.add()
    offsite = servers.add()
    other = servers.add(
        routes={"/seen": [redirect(site.url("/page/1"))], "/away": [redirect(offsite.url("/x"))]}
    )
    spider = CrawlsMoreWhenIdleWithinDomainsSpider
    spider.allowed_domains = [site.host, other.host]
    plan = [site.url("/page/1")] + ([other.url("/page/0")] if origin == "known" else [])

    for target in ("/seen", "/away"):
        spider.more, spider.sent = other.url(target), 0
        result = await run_crawl(plan, spider_cls=spider)

        assert spider.sent == 1
        assert result.failures == []
        if target == "/seen":
            assert result.stat("dupefilter/filtered") == 1
        else:
            assert result.stat("offsite/filtered") == 1
    assert len(site.requests_for("/page/1")) == 2  # once per crawl
    assert offsite.page_requests == []
