"""Real robots.txt files: every one parses and answers, and decisions are compared.

``../shared/corpus/robots`` holds 4,231 files of popular sites collected whatever the HTTP
status (so some are HTML pages); ``../shared/corpus/rpbench`` holds 1,613 more with
111,824 real URLs of those sites. Disagreements with Protego (Scrapy's default parser) are
reported, not failed: Protego is not RFC 9309 (it matches agents by substring, ignores
percent-encoding rules, ...). A disagreement fails only where it is provably ours: the
file is simple enough for the reference matcher of ``_reference_matcher`` to judge, and
the reference sides with Protego.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from pathlib import Path

import pytest
from _reference_matcher import ReferenceRobots, clean_reason
from _shared_data import CORPUS_ROBOTS_DIR, RPBENCH_LINKS_DIR, RPBENCH_ROBOTS_DIR, require
from protego import Protego

from scrapy_rep9309 import RobotsTxt

DEFAULT_LIMIT = 512000
AGENTS = (
    "Googlebot",
    "examplebot",
    "Scrapy/2.19 (+https://scrapy.org)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
)

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")
# Product tokens both parsers understand the same way (Protego also accepts substrings
# of longer strings, which RFC 9309 does not, so full headers are left out here).
COMPARISON_AGENTS = ("googlebot", "bingbot", "examplebot")
LINE_END = re.compile(rb"\r\n|\r|\n")


class CorpusReport(UserWarning):
    """Counts from the Protego comparison, shown in pytest's warnings summary."""


def sample_urls(host: str) -> list[str]:
    return [
        f"https://{host}/",
        f"https://{host}/robots.txt",
        f"https://{host}/search?q=robots&page=2",
        f"http://{host}/wp-admin/admin-ajax.php",
        f"https://{host}/%E3%83%84/caf%C3%A9?x=%2A",
        "/private/page.html",
    ]


def check_file_answers(path: Path) -> None:
    """Parse one file and ask it the questions a crawl asks; raise on anything odd."""
    body = path.read_bytes()
    rules = RobotsTxt.parse(body)
    line_count = len(LINE_END.split(body[:DEFAULT_LIMIT]))
    for agent in AGENTS:
        for url in sample_urls(path.name):
            decision = rules.explain(url, agent)
            assert rules.allowed(url, agent) is decision.allowed
            assert (decision.rule is None) == (decision.line is None)
            if decision.line is not None:
                assert 1 <= decision.line <= line_count, decision
            assert isinstance(decision.user_agents, tuple)
        assert rules.allowed(f"https://{path.name}/robots.txt", agent) is True
        delay = rules.crawl_delay(agent)
        assert delay is None or (isinstance(delay, float) and delay >= 0), delay
    assert all(isinstance(sitemap, str) and sitemap for sitemap in rules.sitemaps)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "directory", [CORPUS_ROBOTS_DIR, RPBENCH_ROBOTS_DIR], ids=["robots", "rpbench"]
)
def test_every_corpus_file_parses_and_answers(directory: Path) -> None:
    files = sorted(require(directory).iterdir())
    assert files, f"{directory} is empty"
    failures: list[str] = []
    for path in files:
        try:
            check_file_answers(path)
        except Exception as error:
            failures.append(f"{path.name}: {error!r}")
    assert not failures, f"{len(failures)} of {len(files)} files failed:\n" + "\n".join(
        failures[:20]
    )


def judgeable(url: str) -> bool:
    return url.isascii() and not any(char.isspace() for char in url)


@pytest.mark.timeout(120)
def test_disagreements_with_protego_on_real_links() -> None:
    links_dir = require(RPBENCH_LINKS_DIR)
    robots_dir = require(RPBENCH_ROBOTS_DIR)
    counts: Counter[str] = Counter()
    disagreeing_hosts: Counter[str] = Counter()
    ours_wrong: list[str] = []
    for links_file in sorted(links_dir.iterdir()):
        robots_file = robots_dir / links_file.name
        if not robots_file.exists():
            continue
        body = robots_file.read_bytes()
        ours = RobotsTxt.parse(body)
        # Exactly how Scrapy's ProtegoRobotParser feeds Protego.
        theirs = Protego.parse(body.decode("utf-8", errors="ignore"))
        reference = ReferenceRobots(body) if clean_reason(body) is None else None
        links = links_file.read_text(encoding="utf-8", errors="replace").split()
        counts["hosts"] += 1
        for url in links:
            for agent in COMPARISON_AGENTS:
                counts["decisions"] += 1
                our_answer = ours.allowed(url, agent)
                if our_answer is theirs.can_fetch(url, agent):
                    continue
                counts["disagreements"] += 1
                disagreeing_hosts[links_file.name] += 1
                if reference is None or not judgeable(url):
                    counts["not judgeable (file or URL outside the reference's scope)"] += 1
                    continue
                truth = reference.decide(url, agent).allowed
                if truth is our_answer:
                    counts["judged: Protego wrong"] += 1
                else:
                    counts["judged: ours wrong"] += 1
                    decision = ours.explain(url, agent)
                    ours_wrong.append(f"{links_file.name} {agent} {url}: ours {decision}")
    summary = ", ".join(f"{key}: {value}" for key, value in counts.items())
    if disagreeing_hosts:
        top = ", ".join(f"{host} ({n})" for host, n in disagreeing_hosts.most_common(8))
        summary += f"; most disagreements on {top}"
    warnings.warn(f"Protego comparison on rpbench links: {summary}", CorpusReport, stacklevel=1)
    print(summary)
    assert counts["decisions"] > 100_000
    assert not ours_wrong, f"{len(ours_wrong)} decisions proven wrong:\n" + "\n".join(
        ours_wrong[:20]
    )
