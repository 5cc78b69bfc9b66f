"""The reference server @modelcontextprotocol/server-everything (npm, over stdio) through a
full agent turn on a real Worker: its `echo` tool runs in a CallTool Step."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dex_agents.testing import reply_text, reply_tools

from ..helpers import events_of, step_types, tool_messages, turns_done

NODE_DIR = Path(__file__).with_name("node")
SERVER_JS = NODE_DIR / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.fixture(scope="module")
def everything_js() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: server-everything is an npm package")
    if not SERVER_JS.is_file():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(NODE_DIR)],
            check=True,
            timeout=300,
        )
    return SERVER_JS


async def test_echo_of_server_everything_through_an_agent_turn(
    make_worker: Any, model: Any, client: Any, everything_js: Path
) -> None:
    model.enqueue(
        reply_tools(("c1", "everything__echo", {"message": "hello from dex"})),
        reply_text("It echoed."),
    )
    with make_worker("tests.mcp.app:flows", MCP_EVERYTHING_JS=str(everything_js)).start():
        session = await client.start_session("Everything", "Echo something.")
        snapshot = await client.wait_for(session, turns_done(1))

    offered = {tool["function"]["name"] for tool in model.requests[0].body["tools"]}
    assert {"everything__echo", "everything__get-sum"} <= offered
    assert tool_messages(model, 1) == {"c1": "Echo: hello from dex"}
    finished = await events_of(client, session, "tool_call_finished")
    assert [(f["tool_call_id"], f["status"]) for f in finished] == [("c1", "succeeded")]
    # echo is annotated readOnlyHint: a CallTool Step with no approval.
    steps = await step_types(client, session)
    assert "CallTool" in steps and "AwaitToolApproval" not in steps
    assert snapshot.messages[-1].text == "It echoed."
