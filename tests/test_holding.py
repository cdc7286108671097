"""HeldRequests: the same Request objects back, per origin, in order, by deadline."""

from __future__ import annotations

from scrapy import Request

from scrapy_rep9309.policy.holding import HeldRequests
from scrapy_rep9309.policy.origin import Origin

A = Origin("https", "a.com", 443)
B = Origin("http", "b.com", 8080)


def _request(path: str) -> Request:
    return Request(f"https://a.com{path}", priority=7, meta={"k": path})


def test_release_returns_the_same_objects_oldest_first() -> None:
    held = HeldRequests()
    first, second = _request("/1"), _request("/2")
    held.hold(A, first, deadline=10)
    held.hold(A, second, deadline=11)
    held.hold(B, _request("/3"), deadline=12)
    assert (len(held), held.count(A), held.count(B)) == (3, 2, 1)

    released = held.release(A)

    assert [entry.request for entry in released] == [first, second]
    assert released[0].request.meta == {"k": "/1"}
    assert (len(held), held.count(A)) == (1, 0)
    assert held.release(A) == []


def test_expire_takes_only_what_is_due_across_origins() -> None:
    held = HeldRequests()
    held.hold(A, _request("/1"), deadline=10)
    held.hold(B, _request("/2"), deadline=11)
    held.hold(A, _request("/3"), deadline=20)
    assert held.next_deadline() == 10

    expired = held.expire(now=11)

    assert sorted(entry.request.url for entry in expired) == [
        "https://a.com/1",
        "https://a.com/2",
    ]
    assert {entry.origin for entry in expired} == {A, B}
    assert list(held.origins()) == [A]
    assert held.next_deadline() == 20


def test_drain_empties_everything() -> None:
    held = HeldRequests()
    held.hold(A, _request("/1"), deadline=10)
    held.hold(B, _request("/2"), deadline=10)
    assert len(held.drain()) == 2
    assert len(held) == 0
    assert held.next_deadline() is None
