from __future__ import annotations

from dex_agents.testing import reply_text, reply_tools


async def test_read_tool_turn(make_worker, model, client, tool_log):
    model.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny in Paris."),
    )
    with make_worker().start():
        session = await client.start_session("Assistant", "What's the weather in Paris?")
        snapshot = await client.wait_for(
            session, lambda s: s.state is not None and s.state.turn_count == 1
        )
    history = [s.step_type for s in await client.get_step_history(session)]
    assert history == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel", "AwaitUserMessage"
    ]
    assert tool_log.count("get_weather") == 1
    assert snapshot.messages[-1].text == "It is sunny in Paris."
