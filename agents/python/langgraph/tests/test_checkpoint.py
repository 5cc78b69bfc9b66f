"""LangGraph's own checkpointer conformance suite on TurnCheckpointSaver, and its dump/load."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate

from dex_agents_langgraph import TurnCheckpointSaver


@checkpointer_test(name="TurnCheckpointSaver")
async def turn_saver() -> AsyncGenerator[TurnCheckpointSaver, None]:
    yield TurnCheckpointSaver()


async def test_the_saver_passes_langgraphs_conformance_suite() -> None:
    report = await validate(turn_saver)
    failed = {
        name: [str(f) for f in result.failures]
        for name, result in report.results.items()
        if result is not None and result.detected and result.passed is not True
    }
    assert failed == {}
    assert report.passed_all()
    ran = {name: result.tests_passed for name, result in report.results.items() if result}
    assert all(ran[name] > 0 for name in ("put", "put_writes", "get_tuple", "list"))


async def test_a_dump_leaves_the_history_out_and_load_puts_it_back() -> None:
    history = [HumanMessage("question " * 100, id="h1"), AIMessage("answer " * 100, id="a1")]
    saver = TurnCheckpointSaver()
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [*history, HumanMessage("new", id="n1")]}
    checkpoint["channel_versions"] = {"messages": "1"}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    stored = await saver.aput(config, checkpoint, {}, {"messages": "1"})  # type: ignore[arg-type]
    await saver.aput_writes(stored, [("messages", "pending")], "task-1")

    text = saver.dump(history_count=2)
    assert "question" not in text and len(text) < len(TurnCheckpointSaver().dump()) + 600
    restored = TurnCheckpointSaver.load(text, history)
    loaded = await restored.aget_tuple(config)  # type: ignore[arg-type]
    assert loaded is not None
    assert [m.id for m in loaded.checkpoint["channel_values"]["messages"]] == ["h1", "a1", "n1"]
    assert loaded.pending_writes == [("task-1", "messages", "pending")]
