"""Which group applies: ROBOTSTXT_USER_AGENT, else the User-Agent the request is sent with."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl import BUILTIN_ENABLED, OURS_ENABLED, PlanSpider, run_crawl
from tests.servers import ServerPool, rules

GROUPS = """\
User-agent: alphabot
Disallow: /alpha-forbidden

User-agent: *
Disallow: /star-forbidden
"""
OTHER_AGENT = "OtherCrawler/1.0 (+https://example.org/bot)"
ALPHA = "alpha"
STAR = "star"


@pytest.mark.parametrize(
    ("settings", "request_headers", "group", "robots_request_agent"),
    [
        ({"ROBOTSTXT_USER_AGENT": "alphabot", "USER_AGENT": OTHER_AGENT}, {}, ALPHA, OTHER_AGENT),
        ({"USER_AGENT": OTHER_AGENT}, {"User-Agent": "alphabot/2.0"}, ALPHA, None),
        (
            {
                "USER_AGENT": OTHER_AGENT,
                "DEFAULT_REQUEST_HEADERS": {"User-Agent": "alphabot/3.0"},
            },
            {},
            ALPHA,
            "alphabot/3.0",
        ),
        (
            {"USER_AGENT": "alphabot/1.0 (+https://example.org)"},
            {},
            ALPHA,
            "alphabot/1.0 (+https://example.org)",
        ),
        ({"USER_AGENT": OTHER_AGENT}, {}, STAR, OTHER_AGENT),
    ],
    ids=[
        "ROBOTSTXT_USER_AGENT",
        "request-header",
        "DEFAULT_REQUEST_HEADERS",
        "USER_AGENT",
        "no-match-uses-star",
    ],
)
@deferred_f_from_coro_f
async def test_user_agent_selects_the_group(
    servers: ServerPool,
    settings: dict[str, Any],
    request_headers: dict[str, str],
    group: str,
    robots_request_agent: str | None,
) -> None:
    site = servers.add(rules(GROUPS))
    alpha, star = site.url("/alpha-forbidden/1"), site.url("/star-forbidden/1")
    plan = [Request(url, headers=request_headers) for url in (alpha, star)]

    result = await run_crawl(plan, settings)

    forbidden = alpha if group == ALPHA else star
    assert result.forbidden_urls == {forbidden}
    assert result.urls == {alpha, star} - {forbidden}
    (fetch,) = site.robots_fetches
    # robots.txt is requested with the crawl's User-Agent (None: a per-request header).
    if robots_request_agent is not None:
        assert fetch.user_agent == robots_request_agent


@deferred_f_from_coro_f
async def test_builtin_ignores_default_request_headers(servers: ServerPool) -> None:
    """Documented contrast: the built-in matches before the header is set."""
    site = servers.add(rules(GROUPS))
    alpha, star = site.url("/alpha-forbidden/1"), site.url("/star-forbidden/1")
    settings = {"USER_AGENT": OTHER_AGENT, "DEFAULT_REQUEST_HEADERS": {"User-Agent": "alphabot/3"}}

    builtin = await run_crawl([alpha, star], settings, enable=BUILTIN_ENABLED)
    ours = await run_crawl([alpha, star], settings, enable=OURS_ENABLED)

    assert builtin.forbidden_urls == {star}
    assert ours.forbidden_urls == {alpha}


#: A no-break space after "compatible;": Scrapy sends a str header as UTF-8.
NON_ASCII_AGENT = "Mozilla/5.0 (compatible;\u00a0alphabot/1.0)"


@pytest.mark.parametrize(
    ("settings", "request_headers"),
    [
        ({"USER_AGENT": NON_ASCII_AGENT}, {}),
        ({"USER_AGENT": OTHER_AGENT}, {"User-Agent": NON_ASCII_AGENT}),
        ({"DEFAULT_REQUEST_HEADERS": {"User-Agent": NON_ASCII_AGENT.encode()}}, {}),
    ],
    ids=["USER_AGENT", "request-header", "DEFAULT_REQUEST_HEADERS-bytes"],
)
@deferred_f_from_coro_f
async def test_a_non_ascii_user_agent_selects_the_same_group_wherever_it_is_set(
    servers: ServerPool, settings: dict[str, Any], request_headers: dict[str, str]
) -> None:
    """As ``check`` and the API read it: a header was read as Latin-1, so the no-break
    space became two characters, the token was no longer found after ``compatible;``
    and the crawler got the ``*`` group (found by a second reviewer)."""
    site = servers.add(rules(GROUPS))
    urls = [site.url("/alpha-forbidden"), site.url("/star-forbidden")]

    result = await run_crawl([Request(url, headers=request_headers) for url in urls], settings)

    assert result.forbidden_urls == {site.url("/alpha-forbidden")}
    assert result.urls == {site.url("/star-forbidden")}


class BytesUserAgentSpider(PlanSpider):
    user_agent = b"alphabot/1.0 (+https://example.org/bot)"


@pytest.mark.parametrize("where", ["USER_AGENT", "spider-attribute"])
@pytest.mark.filterwarnings("ignore::scrapy.exceptions.ScrapyDeprecationWarning")
@deferred_f_from_coro_f
async def test_a_user_agent_given_as_bytes_selects_its_group(
    servers: ServerPool, where: str
) -> None:
    """UserAgentMiddleware sends a bytes USER_AGENT (or spider ``user_agent``) as it is;
    the middleware read it with ``str()``, as ``b'alphabot/1.0 ...'``, whose token names no
    group, and fetched a page alphabot's group forbids (found by a second reviewer)."""
    site = servers.add(rules(GROUPS))
    urls = [site.url("/alpha-forbidden"), site.url("/star-forbidden")]
    settings: dict[str, Any] = {}
    spider_cls: type[PlanSpider] = PlanSpider
    if where == "USER_AGENT":
        settings["USER_AGENT"] = BytesUserAgentSpider.user_agent
    else:
        spider_cls = BytesUserAgentSpider

    result = await run_crawl(urls, settings, spider_cls=spider_cls)

    assert {entry.user_agent for entry in site.page_requests} == {
        BytesUserAgentSpider.user_agent.decode()
    }
    assert result.forbidden_urls == {site.url("/alpha-forbidden")}
    assert result.urls == {site.url("/star-forbidden")}
