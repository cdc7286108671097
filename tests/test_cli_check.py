"""``python -m scrapy_rep9309 check``: verdicts, exit statuses, fetch outcomes, bad input."""

from __future__ import annotations

import contextlib
import gzip
import io
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._commands import check, error_lines, run, run_async, scrapy
from tests.crawl import run_crawl
from tests.servers import Reply, ServerPool, closed_port, redirect, rules

ROBOTS = """\
# shop
User-agent: *
Disallow: /private/
Allow: /private/help

User-agent: MyBot
Disallow: /
"""


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS, encoding="utf-8")
    return path


def verdict(stdout: str, url: str) -> list[str]:
    """The three lines of one URL's verdict."""
    lines = stdout.splitlines()
    for index, line in enumerate(lines):
        if line.split()[1:2] == [url]:
            return [part.strip() for part in lines[index : index + 3]]
    raise AssertionError(f"no verdict for {url} in:\n{stdout}")


def test_all_allowed_exits_0_and_names_rule_line_group(robots_file: Path) -> None:
    result = run(check(str(robots_file), "/products/1", "https://shop.test/private/help"))

    assert result.returncode == 0, result.stderr
    assert verdict(result.stdout, "/products/1") == [
        "allowed     /products/1",
        "rule      none matched (allowed by default)",
        "group     User-agent: *",
    ]
    assert verdict(result.stdout, "https://shop.test/private/help") == [
        "allowed     https://shop.test/private/help",
        "rule      Allow: /private/help (line 4)",
        "group     User-agent: *",
    ]
    assert "user agent  Scrapy (product token: scrapy)" in result.stdout


def test_check_runs_without_importing_scrapy_or_twisted(robots_file: Path) -> None:
    """The tool is for a quick answer anywhere: the engine's imports would cost seconds."""
    result = run(["-X", "importtime", *check(str(robots_file), "/products/1")])

    assert result.returncode == 0, result.stderr
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"scrapy_rep9309.tools.cli", "scrapy_rep9309.tools.urlfetch"} <= imported
    heavy = {name for name in imported if name.split(".")[0] in ("scrapy", "twisted")}
    assert heavy == set()


def test_any_disallowed_exits_1(robots_file: Path) -> None:
    result = run(check(str(robots_file), "/products/1", "/private/orders?id=3"))

    assert result.returncode == 1, result.stderr
    assert verdict(result.stdout, "/private/orders?id=3") == [
        "disallowed  /private/orders?id=3",
        "rule      Disallow: /private/ (line 3)",
        "group     User-agent: *",
    ]


def test_user_agent_header_selects_its_group(robots_file: Path) -> None:
    result = run(
        check(str(robots_file), "/products/1", "--user-agent", "MyBot/2.0 (+https://my.bot)")
    )

    assert result.returncode == 1
    assert verdict(result.stdout, "/products/1") == [
        "disallowed  /products/1",
        "rule      Disallow: / (line 7)",
        "group     User-agent: MyBot",
    ]


USAGE_ROBOTS = """\
License: https://shop.test/license.xml
User-Agent: *
Content-Signal: search=yes, ai-train=no
Allow: /
Disallow: /never/
Content-Usage: train-ai=n, search=y
Content-Usage: /ai-ok/ train-ai=y
"""


def test_usage_preferences_signals_and_licenses_are_shown(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_text(USAGE_ROBOTS, encoding="utf-8")

    result = run(check(str(path), "/test", "/never/test", "/ai-ok/test"))

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[2] == "  license   https://shop.test/license.xml"
    assert lines[3] == "user agent  Scrapy (product token: scrapy)"
    assert lines[4] == "  signals   search=yes, ai-train=no (Content-Signal of its group)"
    test = lines.index("allowed     /test")
    assert lines[test : test + 4] == [
        "allowed     /test",
        "  rule      Allow: / (line 4)",
        "  group     User-agent: *",
        "  usage     train-ai=n, search=y (Content-Usage: train-ai=n, search=y, line 6)",
    ]
    never = lines.index("disallowed  /never/test")
    assert lines[never + 3] == ""  # a URL that may not be crawled has no preferences
    # The group's Content-Signal is a statement too: combined with the path's Content-Usage
    # the most restrictive way, its ai-train=no wins over the /ai-ok/ rule's train-ai=y.
    ok = lines.index("allowed     /ai-ok/test")
    assert lines[ok + 3 :] == [
        "  usage     train-ai=n, search=y (Content-Signal: search=yes, ai-train=no, line 3)"
    ]


PURPOSE_ROBOTS = """\
User-agent: *
Disallow: /private/
Content-Signal: search=yes

User-agent: Google-Extended
Disallow: /no-ai/
Content-Signal: ai-train=no
"""


def test_extra_user_agents_must_be_allowed_too(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_text(PURPOSE_ROBOTS, encoding="utf-8")
    urls = ("/no-ai/1", "/private/1", "/public/1")

    alone = run(check(str(path), *urls))
    extra = ("--extra-user-agent", "Google-Extended", "--extra-user-agent", "GPT2Bot")
    with_extra = run(check(str(path), *urls, *extra))

    assert alone.returncode == 1
    assert verdict(alone.stdout, "/no-ai/1")[0] == "allowed     /no-ai/1"
    assert with_extra.returncode == 1, with_extra.stderr
    lines = with_extra.stdout.splitlines()
    start = lines.index("user agent  Scrapy (product token: scrapy)")
    assert lines[start : start + 6] == [
        "user agent  Scrapy (product token: scrapy)",
        "  signals   search=yes (Content-Signal of its group)",
        "also obeys  Google-Extended (product token: google-extended)",
        "  signals   ai-train=no (Content-Signal of its group)",
        "also obeys  GPT2Bot (product token: gpt2bot)",
        lines[start + 5],
    ]
    assert lines[start + 5].startswith("  warning   the product token 'GPT2Bot'")
    no_ai = lines.index("disallowed  /no-ai/1")
    assert lines[no_ai : no_ai + 4] == [
        "disallowed  /no-ai/1",
        "  rule      Disallow: /no-ai/ (line 6)",
        "  group     User-agent: Google-Extended",
        "  token     Google-Extended (its group forbids the URL)",
    ]
    private = lines.index("disallowed  /private/1")
    assert lines[private + 3] == "  token     Scrapy (its group forbids the URL)"
    public = lines.index("allowed     /public/1")
    # Both groups' signals combine: the purpose token's ai-train=no applies too.
    assert lines[public + 3 :] == [
        "  usage     train-ai=n (Content-Signal: ai-train=no, line 7)",
        "  usage     search=y (Content-Signal: search=yes, line 3)",
    ]


def test_an_empty_extra_user_agent_is_bad_input(robots_file: Path) -> None:
    result = run(check(str(robots_file), "/a", "--extra-user-agent", " "))

    assert result.returncode == 2
    assert "--extra-user-agent must not be empty" in result.stderr


def test_a_user_agent_no_group_can_name_gets_a_warning(robots_file: Path) -> None:
    result = run(check(str(robots_file), "/products/1", "--user-agent", "MJ12bot/v1.4.8"))

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    index = lines.index("user agent  MJ12bot/v1.4.8 (product token: mj12bot)")
    assert lines[index + 1].startswith("  warning   the product token 'MJ12bot' of the user agent")
    assert "only 'User-agent: *' groups" in lines[index + 1]
    assert "signals" not in result.stdout and "usage" not in result.stdout


def test_missing_file_is_bad_input(tmp_path: Path) -> None:
    result = run(check(str(tmp_path / "absent.txt"), "/x"))

    assert result.returncode == 2
    assert error_lines(result) == [
        f"python -m scrapy_rep9309 check: error: cannot read {tmp_path / 'absent.txt'}: "
        "No such file or directory"
    ]
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "required: command"),
        (["ROBOTS"], "required: URL"),
        (["ROBOTS", "products/1"], "not an http(s) URL or a path starting with '/'"),
        (["ROBOTS", "ftp://shop.test/a"], "not an http(s) URL or a path starting with '/'"),
        (["ROBOTS", "http://shop.test:99999/a"], "not a valid http(s) URL"),
        (["ROBOTS", "http://[::1/a"], "not a valid http(s) URL"),
        (["http://[::1/robots.txt", "/a"], "not a valid robots.txt URL"),
        (["ftp://shop.test/robots.txt", "/a"], "ROBOTS must be a file or an http(s) URL"),
        (["ROBOTS", "/a", "--timeout", "0"], "--timeout must be a finite number greater than 0"),
        (["ROBOTS", "/a", "--timeout", "nan"], "--timeout must be a finite number"),
        (["ROBOTS", "/a", "--timeout", "inf"], "--timeout must be a finite number"),
        (["ROBOTS", "/a", "--user-agent", " "], "--user-agent must not be empty"),
        (["ROBOTS", "/a", "--bogus"], "unrecognized arguments: --bogus"),
        (["ROBOTS", "/a", "--require-usage", "ai-train"], "its label is 'train-ai'"),
        (["ROBOTS", "/a", "--max-size", "1000"], "--max-size must be at least 512000"),
        (["ROBOTS", "/a", "--max-size", "big"], "invalid int value: 'big'"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(
    robots_file: Path, args: list[str], message: str
) -> None:
    args = [str(robots_file) if arg == "ROBOTS" else arg for arg in args]
    result = run(["-m", "scrapy_rep9309", *(["check", *args] if args else [])])

    assert result.returncode == 2
    [line] = error_lines(result)
    assert message in line
    assert "Traceback" not in result.stderr


def test_size_limit_ignores_rules_past_500_kib(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("User-agent: *\n" + "#" * 600_000 + "\nDisallow: /late\n")

    result = run(check(str(path), "/late"))

    assert result.returncode == 0
    assert "truncated" in result.stdout


@deferred_f_from_coro_f
async def test_unreachable_robots_txt_disallows_everything(servers: ServerPool) -> None:
    site = servers.add(rules("User-agent: *\nAllow: /\n", status=503))

    result = await run_async(check(site.url("/robots.txt"), site.url("/products/1")))

    assert result.returncode == 1
    assert "  status    503 (unreachable: everything disallowed until it answers" in result.stdout
    assert verdict(result.stdout, site.url("/products/1"))[:2] == [
        f"disallowed  {site.url('/products/1')}",
        "rule      none: robots.txt unreachable, everything disallowed",
    ]
    assert len(site.robots_fetches) == 1


@deferred_f_from_coro_f
async def test_a_robots_txt_compressed_anyway_is_read_as_the_middleware_reads_it(
    servers: ServerPool,
) -> None:
    """Asked for uncompressed, as by the middleware; one compressed all the same is
    decoded (gzip here), and one decompressing past 8 times the size limit is unreachable,
    as in a crawl (tests/test_e2e_content.py)."""
    headers = {"Content-Type": "text/plain", "Content-Encoding": "gzip"}
    site = servers.add(Reply(200, gzip.compress(ROBOTS.encode()), headers))
    bomb = servers.add(Reply(200, gzip.compress(b"User-agent: *\n" + b"\0" * 8_000_000), headers))

    result = await run_async(check(site.url("/robots.txt"), "/private/1", "/a"))
    bombed = await run_async(check(bomb.url("/robots.txt"), "/a"))

    assert result.returncode == 1, result.stderr
    assert verdict(result.stdout, "/private/1")[0] == "disallowed  /private/1"
    assert verdict(result.stdout, "/a")[0] == "allowed     /a"
    assert site.robots_fetches[0].headers.get("Accept-Encoding") == "identity"
    assert bombed.returncode == 1, bombed.stderr
    assert "compressed body past 4096000 bytes decompressed" in bombed.stdout
    assert verdict(bombed.stdout, "/a")[0] == "disallowed  /a"


def _brotli(data: bytes) -> bytes:
    brotli = pytest.importorskip("brotli", reason="brotli is not installed")
    return brotli.compress(data)  # type: ignore[no-any-return]


def _zstd(data: bytes) -> bytes:
    try:
        from backports import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        zstd = pytest.importorskip("compression.zstd", reason="no zstd module is installed")
    return zstd.compress(data)  # type: ignore[no-any-return]


@deferred_f_from_coro_f
@pytest.mark.parametrize(("coding", "compress"), [("br", _brotli), ("zstd", _zstd)])
async def test_brotli_and_zstd_compressed_anyway_are_read_as_in_a_crawl(
    servers: ServerPool, coding: str, compress: Callable[[bytes], bytes]
) -> None:
    """Scrapy's HttpCompressionMiddleware decodes br and zstd when their library is
    installed (Scrapy 2.19 installs both): ``check`` decodes them too, and decides as the
    crawl does, a zip bomb included."""
    headers = {"Content-Type": "text/plain", "Content-Encoding": coding}
    site = servers.add(Reply(200, compress(ROBOTS.encode()), headers))
    bomb = servers.add(Reply(200, compress(b"User-agent: *\n" + b"\0" * 8_000_000), headers))

    result = await run_async(check(site.url("/robots.txt"), "/private/1", "/a"))
    bombed = await run_async(check(bomb.url("/robots.txt"), "/a"))
    crawl = await run_crawl([*site.urls(["/private/1", "/a"]), bomb.url("/a")])

    assert verdict(result.stdout, "/private/1")[0] == "disallowed  /private/1"
    assert verdict(result.stdout, "/a")[0] == "allowed     /a"
    assert crawl.forbidden_urls == {site.url("/private/1")}
    assert site.url("/a") in crawl.urls
    assert "compressed body past 4096000 bytes decompressed" in bombed.stdout
    assert verdict(bombed.stdout, "/a")[0] == "disallowed  /a"
    assert bomb.page_requests == []


def _cut_edge_gzip(limit: int) -> bytes:
    """A gzip'd robots.txt whose first ``limit`` bytes decompress to under 8x ``limit``
    (the decompression bound) and whose first ``limit`` + 1,000 bytes to over it: a
    stored (uncompressed) member of rules and comments, then a member of zeros that
    decompresses about 1,000 times its size, starting 3,000 bytes before the cut."""
    lines = bytearray(b"User-agent: *\nDisallow: /private/\n")
    letters = b"abcdefghijklmnopqrstuvwxyz0123456789"
    rng = random.Random(9309)
    while len(lines) < limit - 3_200:
        lines += b"# " + bytes(rng.choices(letters, k=60)) + b"\n"
    return gzip.compress(bytes(lines), compresslevel=0) + gzip.compress(b"\0" * 20_000_000)


def _gunzip_all(data: bytes) -> bytes:
    """Every gzip member, the last one as far as it goes (as Scrapy's ``gunzip``)."""
    with contextlib.suppress(EOFError):
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as members:
            return members.read()
    output = bytearray()
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as members, contextlib.suppress(EOFError):
        while chunk := members.read1(65536):
            output += chunk
    return bytes(output)


@deferred_f_from_coro_f
async def test_a_compressed_robots_txt_is_cut_at_the_size_limit_before_it_is_decompressed(
    servers: ServerPool,
) -> None:
    """The crawl reads a compressed robots.txt as ``check`` does: its first
    REP9309_MAX_SIZE bytes, decompressed within 8x that. The crawl used to keep the
    whole network read that crossed the limit (up to 64 KiB more), so a body near the
    decompression bound was unreachable (all forbidden) in the crawl and allowed by
    ``check`` (found by a second reviewer). The body comes in 128,000-byte writes, so the
    read that crosses the limit carries 16,000 bytes past it."""
    limit = 512_000  # REP9309_MAX_SIZE's default, which ``check`` uses
    body = _cut_edge_gzip(limit)
    assert len(_gunzip_all(body[: limit + 1])) < 8 * limit < len(_gunzip_all(body[: limit + 1_000]))
    headers = {"Content-Type": "text/plain", "Content-Encoding": "gzip"}
    site = servers.add(Reply(200, body, headers, chunk_size=128_000, chunk_interval=0.05))

    result = await run_async(check(site.url("/robots.txt"), "/private/1", "/a"))
    crawl = await run_crawl(site.urls(["/private/1", "/a"]))

    assert verdict(result.stdout, "/private/1")[0] == "disallowed  /private/1"
    assert verdict(result.stdout, "/a")[0] == "allowed     /a"
    assert crawl.forbidden_urls == {site.url("/private/1")}
    assert crawl.urls == {site.url("/a")}
    assert crawl.stats["robotstxt/truncated"] == 1


@deferred_f_from_coro_f
async def test_a_line_cut_by_the_size_limit_is_dropped_wherever_robots_txt_comes_from(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The 512,000th byte falls inside ``Disallow: /private-zone/``: its first part,
    ``Disallow: /``, is dropped, not read (docs/matching.md), by ``check`` on the file, on
    the URL, by ``scrapy robots`` and by a crawl alike. Fetched, it was read (everything
    forbidden): the fetch kept no byte past the limit, so the parser could not see that
    the line goes on (found by a second reviewer)."""
    limit = 512_000
    head = b"User-agent: *\nDisallow: /private/\n"
    filler = b"# " + b"x" * 60 + b"\n"
    body = bytearray(head)
    while len(body) + len(filler) < limit - len(b"Disallow: /"):
        body += filler
    body += b"#" * (limit - len(b"Disallow: /") - len(body) - 1) + b"\n"
    body += b"Disallow: /private-zone/\n# end\n"
    assert body[:limit].endswith(b"\nDisallow: /")
    (tmp_path / "robots.txt").write_bytes(body)
    site = servers.add(rules(bytes(body)))

    from_file = await run_async(check(str(tmp_path / "robots.txt"), "/a"))
    from_url = await run_async(check(site.url("/robots.txt"), "/a"))
    command = await run_async(
        scrapy("robots", "-s", "TELNETCONSOLE_ENABLED=False", site.url("/a")), cwd=tmp_path
    )
    crawl = await run_crawl(site.urls(["/a"]))

    for result in (from_file, from_url, command):
        assert "allowed     " in result.stdout, result.stdout + result.stderr
        assert "disallowed" not in result.stdout, result.stdout
    assert crawl.urls == {site.url("/a")}


def _gzip_members(data: bytes) -> bytes:
    return gzip.compress(data[:20]) + gzip.compress(data[20:])


def _zstd_frames(data: bytes) -> bytes:
    return _zstd(data[:20]) + _zstd(data[20:])


def _gzip_then_br(data: bytes) -> bytes:
    return _brotli(gzip.compress(data))


@deferred_f_from_coro_f
@pytest.mark.parametrize(
    ("coding", "compress"),
    [
        ("gzip", _gzip_members),
        ("zstd", _zstd_frames),
        ("gzip, x-unknown", gzip.compress),
        (("gzip", "br"), _gzip_then_br),
    ],
    ids=["gzip-members", "zstd-frames", "gzip-then-unknown", "two-header-lines"],
)
async def test_content_codings_are_undone_as_in_a_crawl(
    servers: ServerPool, coding: str | tuple[str, ...], compress: Callable[[bytes], bytes]
) -> None:
    """Several gzip members or zstd frames are all read; decoding stops at a coding
    HttpCompressionMiddleware does not know (the body is then not robots.txt text: no
    rule, allowed), and every Content-Encoding line counts. ``check`` and a crawl decide
    alike (found by a second reviewer: they did not in each case)."""
    headers = {"Content-Type": "text/plain", "Content-Encoding": coding}
    site = servers.add(Reply(200, compress(ROBOTS.encode()), headers))

    result = await run_async(check(site.url("/robots.txt"), "/private/1"))
    crawl = await run_crawl(site.urls(["/private/1"]))

    decided_by_check = verdict(result.stdout, "/private/1")[0].split()[0]
    decided_by_crawl = "allowed" if crawl.urls else "disallowed"
    assert decided_by_check == decided_by_crawl, result.stdout
    if coding != "gzip, x-unknown":
        assert crawl.forbidden_urls == {site.url("/private/1")}


@deferred_f_from_coro_f
async def test_refused_connection_is_unreachable() -> None:
    robots_url = f"http://127.0.0.1:{closed_port()}/robots.txt"

    result = await run_async(check(robots_url, "/a"))

    assert result.returncode == 1
    assert "  status    none (unreachable" in result.stdout
    assert "ConnectionRefusedError" in result.stdout


@deferred_f_from_coro_f
async def test_client_error_allows_everything(servers: ServerPool) -> None:
    site = servers.add(rules("User-agent: *\nDisallow: /\n", status=404))

    result = await run_async(check(site.url("/robots.txt"), "/private/1"))

    assert result.returncode == 0
    assert "  status    404 (unavailable: no rules, everything allowed" in result.stdout
    assert verdict(result.stdout, "/private/1")[0] == "allowed     /private/1"


@deferred_f_from_coro_f
async def test_redirects_across_hosts_are_followed_and_shown(servers: ServerPool) -> None:
    final = servers.add(rules(ROBOTS))
    middle = servers.add(redirect(final.url("/robots.txt"), status=302))
    first = servers.add(redirect(middle.url("/robots.txt")))

    result = await run_async(
        check(first.url("/robots.txt"), first.url("/private/x"), "--user-agent", "Tester/1.0")
    )

    assert result.returncode == 1
    chain = " -> ".join(site.url("/robots.txt") for site in (first, middle, final))
    assert f"  redirects {chain}" in result.stdout
    assert "rule      Disallow: /private/ (line 3)" in result.stdout
    assert [entry.user_agent for entry in final.robots_fetches] == ["Tester/1.0"]


@deferred_f_from_coro_f
async def test_more_than_five_redirects_is_unavailable(servers: ServerPool) -> None:
    target = servers.add(rules("User-agent: *\nDisallow: /\n"))
    hops = [target]
    for _ in range(6):
        hops.append(servers.add(redirect(hops[-1].url("/robots.txt"))))

    result = await run_async(check(hops[-1].url("/robots.txt"), "/a"))

    assert result.returncode == 0
    assert "(unavailable: no rules, everything allowed" in result.stdout
    assert "more than 5 redirects" in result.stdout
    assert target.robots_fetches == []


@deferred_f_from_coro_f
async def test_slow_fetch_reports_progress(servers: ServerPool) -> None:
    site = servers.add(rules("User-agent: *\nDisallow: /a\n", delay=5.5))

    result = await run_async(check(site.url("/robots.txt"), "/a"))

    assert result.returncode == 1
    assert f"fetching {site.url('/robots.txt')}" in error_lines(result)
    assert any(line.startswith("still waiting for") for line in error_lines(result))


@deferred_f_from_coro_f
async def test_userinfo_in_the_robots_url_is_not_taken_for_the_host(servers: ServerPool) -> None:
    """``http://user:pw@host/robots.txt``: a crawl fetches the origin's robots.txt (no
    userinfo); ``check`` asked urllib for the host ``user:pw@host`` (unreachable)."""
    site = servers.add(rules(ROBOTS))
    base = f"http://user:pw@{site.host}:{site.port}"

    result = await run_async(check(f"{base}/robots.txt", "/private/1", "/a"))

    assert verdict(result.stdout, "/private/1")[0] == "disallowed  /private/1", result.stdout
    assert verdict(result.stdout, "/a")[0] == "allowed     /a"
    assert site.robots_fetches[0].headers.get("Authorization") is None


@deferred_f_from_coro_f
async def test_required_usage_and_size_limit_decide_as_in_a_crawl(servers: ServerPool) -> None:
    """``--require-usage`` and ``--max-size`` are REP9309_REQUIRE_USAGE and
    REP9309_MAX_SIZE: ``check`` now says what a crawl with them downloads (without them,
    it said /ai/x and /late would be downloaded)."""
    body = "User-agent: *\nContent-Usage: /ai train-ai=n\n" + "#" * 600_000 + "\nDisallow: /late\n"
    site = servers.add(rules(body))
    urls = site.urls(["/ai/x", "/late", "/pub"])
    options = ("--require-usage", "train-ai", "--max-size", "700000")

    checked = await run_async(check(site.url("/robots.txt"), *urls, *options))
    crawled = await run_crawl(
        urls, {"REP9309_REQUIRE_USAGE": ["train-ai"], "REP9309_MAX_SIZE": 700_000}
    )

    assert checked.returncode == 1, checked.stderr
    assert verdict(checked.stdout, site.url("/ai/x"))[0] == f"refused     {site.url('/ai/x')}"
    assert "  refused   train-ai=n (--require-usage)" in checked.stdout
    assert verdict(checked.stdout, site.url("/late"))[:2] == [
        f"disallowed  {site.url('/late')}",
        "rule      Disallow: /late (line 4)",
    ]
    assert verdict(checked.stdout, site.url("/pub"))[0] == f"allowed     {site.url('/pub')}"
    assert crawled.urls == {site.url("/pub")}
