"""The Python core's scripted Anthropic Messages server for the package's Node tests.

Reads the replies (a JSON list of `AnthropicReply` fields, tool uses as `[id, name, input]`)
from the file given as the first argument, prints `serving <base URL>`, then answers commands on
stdin, one a line: `requests` prints the JSON bodies of the scripted (non-side) requests so far
as one line. It stops when stdin closes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from dex_agents.testing.anthropic_server import (
    AnthropicReply,
    AnthropicToolUse,
    ScriptedAnthropicServer,
    no_tools,
)


def reply_of(data: dict[str, Any]) -> AnthropicReply:
    uses = tuple(AnthropicToolUse(i, n, a) for i, n, a in data.pop("tool_uses", []))
    return AnthropicReply(tool_uses=uses, **data)


def main() -> None:
    replies = [reply_of(item) for item in json.loads(Path(sys.argv[1]).read_text())]
    with ScriptedAnthropicServer(side=no_tools) as server:
        server.enqueue(*replies)
        print(f"serving {server.base_url}", flush=True)
        for line in sys.stdin:
            if line.strip() == "requests":
                print(json.dumps([r.body for r in server.requests]), flush=True)


if __name__ == "__main__":
    main()
