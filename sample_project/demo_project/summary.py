"""The table the demo prints at the end: one row per origin, then the servers' view."""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

from demo_project.localweb import DemoWeb


@dataclass(frozen=True)
class OriginRow:
    """What happened to one origin during the crawl (numbers as text; "-" = not observable).

    ``failed``: requests whose errback got anything but "Forbidden by robots.txt"
    or "Usage refused by robots.txt" (e.g. held too long for an unreachable
    robots.txt): nothing goes uncounted. ``usage``: the usage preferences the
    origin's pages had (``OriginReport.usage``).
    """

    site: str
    origin: str
    robots: str
    pages: str
    forbidden: str
    deferred: str
    released: str
    failed: str
    usage: str


HEADINGS = OriginRow(
    site="site",
    origin="origin",
    robots="robots.txt",
    pages="pages",
    forbidden="forbidden",
    deferred="deferred",
    released="released",
    failed="failed",
    usage="usage",
)
NUMERIC = {"pages", "forbidden", "deferred", "released", "failed"}


def render_table(rows: list[OriginRow]) -> str:
    """Fixed-width columns, two spaces apart (split on 2+ spaces to parse)."""
    table = [astuple(HEADINGS), *(astuple(row) for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    names = [field.name for field in fields(OriginRow)]
    lines = []
    for line in table:
        cells = [
            cell.rjust(width) if name in NUMERIC else cell.ljust(width)
            for cell, width, name in zip(line, widths, names, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def render_server_log(web: DemoWeb) -> str:
    """What each site served, in order, so the crawler's view can be checked."""
    width = max(len(name) for name in web.sites)
    return "\n".join(
        f"{name.ljust(width)}  {site.log_summary()}" for name, site in web.sites.items()
    )
