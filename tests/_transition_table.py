"""The transition table of docs/how-it-works.md, rendered from ``policy.machine.TRANSITIONS``.

Rows with the same event, next state and effects are merged, their states listed
together; "(same)" means the state does not change. ``tests/test_machine.py`` checks
that docs/how-it-works.md contains exactly this table, so the two cannot drift apart.
"""

from __future__ import annotations

from scrapy_rep9309.policy.machine import TRANSITIONS, State


def transition_table() -> str:
    by_event: dict[tuple[str, str], list[tuple[State, State]]] = {}
    for (state, event), (next_state, effects) in TRANSITIONS.items():
        done = ", ".join(effect.value for effect in effects) or "none"
        by_event.setdefault((event.value, done), []).append((state, next_state))
    groups: dict[tuple[str, str, str], list[State]] = {}
    for (event, done), pairs in by_event.items():
        targets = {next_state for _, next_state in pairs}
        for state, next_state in pairs:
            if len(targets) == 1:
                target = next_state.value
            elif all(state is next_state for state, next_state in pairs):
                target = "(same)"
            else:
                target = next_state.value
            groups.setdefault((event, target, done), []).append(state)
    order = list(State)
    rows = ["| state | event | next state | effects, in order |", "|---|---|---|---|"]
    for (event, target, done), states in sorted(
        groups.items(), key=lambda item: (order.index(item[1][0]), item[0][0])
    ):
        states.sort(key=order.index)
        listed = ", ".join(state.value for state in states)
        if len(states) == len(State) - 1 and State.CLOSED not in states:
            listed = "any but closed"
        rows.append(f"| {listed} | {event} | {target} | {done} |")
    return "\n".join(rows) + "\n"
