"""Which implementation of the two hot parts, the group index and the rule set, is used.

``scrapy_rep9309.rules._speedups`` (C, built by ``setup.py`` wherever a compiler is found)
and the pure-Python modules :mod:`~scrapy_rep9309.rules.groups` and
:mod:`~scrapy_rep9309.rules.matcher` implement the same two classes with the same
behaviour; the compiled ones are several times faster, the Python ones are the
reference the compiled ones are tested against, and the fallback when the extension
could not be built. Set the environment variable ``SCRAPY_REP9309_PURE_PYTHON=1`` to
use Python even where the extension exists.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol

from scrapy_rep9309.rules import groups, matcher
from scrapy_rep9309.rules.matcher import MatchKey

PURE_PYTHON_VARIABLE = "SCRAPY_REP9309_PURE_PYTHON"


class GroupIndexProtocol(Protocol):
    """The groups of one robots.txt body; see :class:`scrapy_rep9309.rules.groups.GroupIndex`."""

    def __len__(self) -> int: ...

    def naming(self, token: bytes) -> list[int]: ...

    def agents(self, index: int) -> list[bytes]: ...

    def collect(
        self,
        index: int,
        allows: dict[int, bytes],
        disallows: dict[int, bytes],
        crawl_delays: dict[int, bytes],
    ) -> None: ...

    def span(self, index: int) -> tuple[int, int, int]: ...


class RuleSetProtocol(Protocol):
    """Compiled rules; see :class:`scrapy_rep9309.rules.matcher.RuleSet`."""

    def decide(self, path: str) -> MatchKey | None: ...

    def allowed(self, url: str) -> bool: ...

    def written(self, key: MatchKey) -> bytes: ...


class RuleSetClass(Protocol):
    """How rule sets are made: from tables (tests, tools), or straight from chosen groups."""

    def __call__(
        self, allows: dict[int, bytes], disallows: dict[int, bytes]
    ) -> RuleSetProtocol: ...

    def from_groups(
        self, groups: GroupIndexProtocol, indexes: Iterable[int]
    ) -> RuleSetProtocol: ...


class Implementation(NamedTuple):
    """The classes :class:`~scrapy_rep9309.rules.robotstxt.RobotsTxt` is built from."""

    name: str
    #: ``GroupIndex(body)``
    GroupIndex: Callable[[bytes], GroupIndexProtocol]
    #: ``RuleSet(allows, disallows)``, both mapping line numbers to values as written, or
    #: ``RuleSet.from_groups(group_index, indexes)``.
    RuleSet: RuleSetClass


PYTHON = Implementation("python", groups.GroupIndex, matcher.RuleSet)

COMPILED: Implementation | None
try:
    from scrapy_rep9309.rules import _speedups
except ImportError:  # built without a compiler: the Python classes do the work
    COMPILED = None
else:
    COMPILED = Implementation("compiled", _speedups.GroupIndex, _speedups.RuleSet)

#: What new :class:`~scrapy_rep9309.rules.robotstxt.RobotsTxt` objects use.
ACTIVE: Implementation = (
    COMPILED if COMPILED is not None and os.environ.get(PURE_PYTHON_VARIABLE) != "1" else PYTHON
)
