"""The README's complete example runs as written: its Worker module and its client script,
with the SDK's default OpenAI client pointed at the scripted server."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing import reply_text, reply_tools
from dex_agents.testing.readme import python_blocks, run_example

README = Path(__file__).parent.parent / "README.md"


def test_the_readme_example_refunds_after_an_approval(model, tmp_path: Path) -> None:
    app, chat = python_blocks(README)[:2]
    model.enqueue(
        reply_tools(("c1", "get_order", {"order_id": "o-42"})),
        reply_tools(("c2", "transfer_to_billing", {})),
        reply_tools(("c3", "refund", {"order_id": "o-42"})),
        reply_text("Order o-42 is refunded."),
    )
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test"}
    chat_run = run_example(app, chat, tmp_path, "sqlite:///support.sqlite", env)

    assert chat_run.returncode == 0, chat_run.stderr
    assert chat_run.stdout.splitlines() == [
        'approving refund {"order_id": "o-42"}',
        "Order o-42 is refunded.",
    ]
    assert [r.body["instructions"] for r in model.requests] == [
        "You help customers. Hand refunds to Billing.",
        "You help customers. Hand refunds to Billing.",
        "You handle refunds.",
        "You handle refunds.",
    ]
    outputs = {
        i["call_id"]: i["output"]
        for i in model.requests[-1].body["input"]
        if i.get("type") == "function_call_output"
    }
    assert outputs == {
        "c1": "order o-42 of Ada: paid",
        "c2": '{"assistant": "Billing"}',
        "c3": "refunded o-42",
    }
