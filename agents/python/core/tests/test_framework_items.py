"""The per-session memo of parsed framework items a Worker keeps beside its messages."""

from __future__ import annotations

import json
from typing import Any

from dex_agents.message_cache import MessageCache
from dex_agents.runner import FrameworkItemCache
from dex_agents.types import AgentMessage


def message(sequence: int, item: str) -> AgentMessage:
    return AgentMessage(
        sequence=sequence,
        turn_id="turn-1",
        role="user",
        framework_item=item,
        created_at="2026-01-01T00:00:00.000Z",
    )


class CountingParse:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, item: str) -> Any:
        self.calls += 1
        return json.loads(item)


def test_parses_each_stored_message_once() -> None:
    cache = FrameworkItemCache()
    parse = CountingParse()
    first, second = message(1, '{"a": 1}'), message(2, '{"b": 2}')

    assert cache.parsed(first, parse) == {"a": 1}
    assert cache.parsed(second, parse) == {"b": 2}
    assert cache.parsed(first, parse) is cache.parsed(first, parse)
    assert parse.calls == 2


def test_a_different_item_or_parse_function_parses_again() -> None:
    cache = FrameworkItemCache()
    parse, other = CountingParse(), CountingParse()
    cache.parsed(message(1, '{"a": 1}'), parse)

    assert cache.parsed(message(1, '{"a": 2}'), parse) == {"a": 2}
    assert cache.parsed(message(1, '{"a": 2}'), other) == {"a": 2}
    assert (parse.calls, other.calls) == (2, 1)


def test_retain_forgets_sequences_outside_the_range() -> None:
    cache = FrameworkItemCache()
    parse = CountingParse()
    for sequence in range(1, 6):
        cache.parsed(message(sequence, "{}"), parse)

    cache.retain(after=2, through=4)

    assert len(cache) == 2
    cache.parsed(message(3, "{}"), parse)
    assert parse.calls == 5


def test_message_cache_keeps_parsed_items_only_for_sessions_it_holds() -> None:
    cache = MessageCache()
    assert cache.framework_items("unknown") is not cache.framework_items("unknown")
    cache._sessions["s1"] = (0, [message(1, "{}")])

    assert cache.framework_items("s1") is cache.framework_items("s1")


class CountingFold:
    """A history as the tuple of the messages' items; counts the messages it folds."""

    def __init__(self) -> None:
        self.folded: list[int] = []

    def __call__(self, earlier: tuple[str, ...] | None, messages: Any) -> tuple[str, ...]:
        self.folded.extend(m.sequence for m in messages)
        return (*(earlier or ()), *(m.framework_item for m in messages))


def test_a_fold_reads_only_the_messages_appended_since_its_last_call() -> None:
    cache = FrameworkItemCache()
    fold = CountingFold()
    history = [message(sequence, f"m{sequence}") for sequence in range(1, 4)]

    first = cache.folded(history, fold)
    history += [message(4, "m4"), message(5, "m5")]
    second = cache.folded(history, fold)

    assert first == ("m1", "m2", "m3")
    assert second == ("m1", "m2", "m3", "m4", "m5")
    assert cache.folded(history, fold) is second
    assert fold.folded == [1, 2, 3, 4, 5]


def test_a_fold_starts_over_when_the_messages_do_not_continue_its_last_ones() -> None:
    cache = FrameworkItemCache()
    fold = CountingFold()
    cache.folded([message(1, "m1"), message(2, "m2"), message(3, "m3")], fold)

    # A context summary moved the start; then a sequence came back with other text.
    assert cache.folded([message(2, "m2"), message(3, "m3")], fold) == ("m2", "m3")
    assert cache.folded([message(2, "m2"), message(3, "other")], fold) == ("m2", "other")
    # A shorter history (a turn's messages rolled back) is folded anew too.
    assert cache.folded([message(2, "m2")], fold) == ("m2",)
    assert fold.folded == [1, 2, 3, 2, 3, 2, 3, 2]


def test_retain_forgets_folds_over_messages_outside_the_range() -> None:
    cache = FrameworkItemCache()
    fold = CountingFold()
    history = [message(sequence, f"m{sequence}") for sequence in range(1, 4)]
    cache.folded(history, fold)

    cache.retain(after=0, through=3)
    cache.folded(history, fold)
    assert fold.folded == [1, 2, 3]

    cache.retain(after=1, through=3)
    cache.folded(history[1:], fold)
    assert fold.folded == [1, 2, 3, 2, 3]
