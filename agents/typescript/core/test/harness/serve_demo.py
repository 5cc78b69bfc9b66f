"""The session API for the AgentClient tests: a scripted model on loopback, a Worker hosting
the core's demo flow, and `dex-agents serve`, on a temporary SQLite file.

Prints one JSON line (the API's URL, its token, the flow type, the tool log's path) once
everything answers, then runs until its standard input closes.

    uv run --project ../../python/core python test/harness/serve_demo.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from dex_agents.demo import FLOW_TYPE, TOOL_LOG_ENV
from dex_agents.testing import (
    MODEL_URL_ENV,
    ScriptedModelServer,
    ServeProcess,
    WorkerProcess,
    reply_text,
    reply_tools,
)


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="dex-ts-client-"))
    database_url = f"sqlite:///{folder / 'dex.sqlite'}"
    tool_log = folder / "tools.jsonl"
    with ScriptedModelServer() as model:
        model.enqueue(
            reply_tools(("call_weather", "get_weather", {"city": "Lisbon"})),
            reply_text("It is 22 °C and sunny in Lisbon."),
            reply_tools(("call_email", "send_email", {"to": "ana@example.com", "body": "22 °C"})),
            reply_text("Done: Ana has the forecast."),
            # The client's helpers: startSessionAndWait, then runTurn up to an approval and
            # waitForTurn after it.
            reply_tools(("call_porto", "get_weather", {"city": "Porto"})),
            reply_text("Cloudy in Porto."),
            reply_tools(("call_rui", "send_email", {"to": "rui@example.com", "body": "Cloudy"})),
            reply_text("Sent to Rui."),
        )
        env = {MODEL_URL_ENV: model.base_url, TOOL_LOG_ENV: str(tool_log)}
        with (
            WorkerProcess("dex_agents.demo:flows", database_url=database_url, env=env),
            ServeProcess(database_url, env={"DEX_AGENTS_WEB_HEARTBEAT_SECONDS": "0.3"}) as serve,
        ):
            ready = {
                "base_url": f"{serve.base_url}/api",
                "token": serve.token,
                "flow_type": FLOW_TYPE,
                "tool_log": str(tool_log),
            }
            print(json.dumps(ready), flush=True)
            sys.stdin.read()


if __name__ == "__main__":
    main()
