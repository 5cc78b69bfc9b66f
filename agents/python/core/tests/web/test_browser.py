"""The session viewer in a real browser (Debian's Chromium) against a real `dex-agents serve`
process and a real Worker process with the scripted model: the session list, a session's live
view with a slow tool, an approval and a reload mid-turn, and the same through the AI SDK's
`useChat` page. Each test checks the page and the backend (Step history, the tool log)."""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

from dex_agents import AgentClient
from dex_agents.testing import (
    MODEL_URL_ENV,
    ScriptedModelServer,
    ScriptedReply,
    ServeProcess,
    ToolRunLog,
    WorkerProcess,
    reply_text,
    reply_tools,
)

CORE = Path(__file__).resolve().parents[2]
STATIC_INDEX = CORE / "src" / "dex_agents" / "web" / "static" / "index.html"
# Every run takes the screenshots; they replace the documentation's only when asked:
# DEX_AGENTS_SCREENSHOTS=docs/screenshots uv run pytest tests/web/test_browser.py
SCREENSHOTS = Path(
    os.environ.get("DEX_AGENTS_SCREENSHOTS")
    or Path(tempfile.gettempdir()) / "dex-agents-screenshots"
)
CHROMIUM = "/usr/bin/chromium"
SLOW_SECONDS = 6  # long enough to reload the page while the tool runs

pytestmark = [
    pytest.mark.skipif(
        not STATIC_INDEX.exists(),
        reason=f"the viewer is not built ({STATIC_INDEX} is absent): "
        "run `npm ci && npm run build` in agents/python/core/web",
    ),
    pytest.mark.asyncio(loop_scope="module"),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser")


@pytest.fixture(scope="module")
def database_url(workdir: Path) -> str:
    return f"sqlite:///{workdir / 'sessions.sqlite'}"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def tool_log(workdir: Path) -> ToolRunLog:
    return ToolRunLog(workdir / "tools.jsonl")


@pytest.fixture(scope="module")
def worker(
    database_url: str, model: ScriptedModelServer, tool_log: ToolRunLog, workdir: Path
) -> Iterator[WorkerProcess]:
    process = WorkerProcess(
        "tests.apps.basic:flows",
        database_url=database_url,
        cwd=CORE,
        env={MODEL_URL_ENV: model.base_url, "TOOL_LOG": str(tool_log.path)},
        log_path=workdir / "worker.log",
    )
    process.start()
    yield process
    process.kill()


@pytest.fixture(scope="module")
def server(database_url: str, worker: WorkerProcess, workdir: Path) -> Iterator[ServeProcess]:
    with ServeProcess(database_url, log_path=workdir / "serve.log") as serve:
        yield serve


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(database_url: str) -> AsyncIterator[AgentClient]:
    agent_client = AgentClient(database_url)
    yield agent_client
    await agent_client.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM)
        yield chromium
        await chromium.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, server: ServeProcess) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1366, "height": 860})
    tab = await context.new_page()
    yield tab
    await context.close()


async def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


async def step_types(client: AgentClient, session_id: str) -> list[str]:
    return [step.step_type for step in await client.get_step_history(session_id)]


async def wait_for_tool_start(
    tool_log: ToolRunLog, count: int, tool: str = "slow_read", timeout: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout
    while len(tool_log.entries(tool)) < count:
        assert time.monotonic() < deadline, f"{tool} did not start"
        await asyncio.sleep(0.05)


def script_turn(model: ScriptedModelServer, recipient: str) -> None:
    """A turn that streams text, runs a slow read, asks to approve an email, and answers."""
    model.enqueue(
        reply_tools(
            ("slow-1", "slow_read", {"seconds": SLOW_SECONDS}),
            text="Let me look that up first.",
        ),
        reply_tools(
            ("mail-1", "send_email", {"to": recipient, "body": "Hello"}),
            text="Now I will write the email.",
        ),
        reply_text(f"Done: the email to {recipient} is sent."),
    )


async def test_viewer_lists_sessions_streams_a_turn_survives_a_reload_and_approves(
    page: Page,
    server: ServeProcess,
    client: AgentClient,
    model: ScriptedModelServer,
    tool_log: ToolRunLog,
) -> None:
    session_id = await client.start_session("Assistant")
    await page.goto(f"{server.base_url}/#token={server.token}")
    row = page.locator(f'tr[data-session-id="{session_id}"]')
    await expect(row).to_contain_text("Assistant")
    await expect(row).to_contain_text("waiting for user message")
    assert "token" not in page.url  # the token left the address bar for sessionStorage
    await screenshot(page, "viewer-sessions.png")

    await row.get_by_role("link").click()
    await expect(page.locator(".connection")).to_have_text("live")
    script_turn(model, "ana@example.com")
    await page.get_by_label("Message").fill("Look it up, then email Ana.")
    await page.get_by_role("button", name="Send").click()

    # The first model call's text streams in before any message stores it.
    live = page.locator('[data-role="live"]', has_text="Let me look that up first.")
    await expect(live).to_be_visible()
    await wait_for_tool_start(tool_log, 1)
    snapshot = await client.get_agent_snapshot(session_id)
    assert snapshot.state is not None and snapshot.state.status == "running_tools"
    assert all("Let me look" not in (m.text or "") for m in snapshot.messages)

    await page.reload()  # mid-turn, while slow_read runs: nothing is lost
    await expect(page.locator(".connection")).to_have_text("live")
    await expect(live).to_be_visible()
    await expect(page.get_by_text("Look it up, then email Ana.")).to_be_visible()
    slow = page.locator('.tool-call[data-tool-call-id="slow-1"]')
    await expect(slow).to_contain_text("read")

    approval = page.locator('.interrupt[data-interrupt-id="mail-1"]')
    await expect(approval).to_contain_text("send_email", timeout=30_000)
    await expect(approval).to_contain_text("ana@example.com")
    mail = page.locator('.tool-call[data-tool-call-id="mail-1"]')
    await expect(mail.locator(".badge")).to_have_text("awaiting approval")
    await expect(mail).to_contain_text("non idempotent write")
    await expect(slow.locator(".badge")).to_have_text("succeeded")
    assert tool_log.count("send_email") == 0
    await screenshot(page, "viewer-session-approval.png")

    await approval.get_by_role("button", name="Approve").click()
    await expect(page.get_by_text("Done: the email to ana@example.com is sent.")).to_be_visible()
    result = page.locator('.message.tool[data-tool-call-id="mail-1"]')
    await expect(result).to_contain_text("sent to ana@example.com")
    await expect(result.locator(".badge")).to_have_text("succeeded")
    await expect(page.locator('[data-role="live"]')).to_have_count(0)  # stored messages now
    await expect(page.locator(".session-head .badge")).to_have_text("waiting for user message")
    timeline = page.locator(".timeline")
    await expect(timeline.locator('[data-step-type="CallSingleAttemptTool"]')).to_contain_text(
        "succeeded"
    )

    assert await step_types(client, session_id) == [
        "StartAgentSession",
        "AwaitUserMessage",
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitToolApproval",
        "ResumeTurn",
        "CallSingleAttemptTool",
        "RunModel",
        "AwaitUserMessage",
    ]
    sent = [e for e in tool_log.entries("send_email") if e["to"] == "ana@example.com"]
    assert len(sent) == 1
    assert [e["phase"] for e in tool_log.entries("slow_read")] == ["started", "finished"]


async def test_chat_page_streams_approves_in_the_chat_and_resumes_after_a_reload(
    page: Page,
    server: ServeProcess,
    client: AgentClient,
    model: ScriptedModelServer,
    tool_log: ToolRunLog,
) -> None:
    session_id = await client.start_session("Assistant")
    slow_runs = len(tool_log.entries("slow_read"))
    await page.goto(f"{server.base_url}/#token={server.token}")
    await page.goto(f"{server.base_url}/#/sessions/{session_id}/chat")
    await expect(page.locator("[data-chat-status]")).to_have_text("ready")

    script_turn(model, "bo@example.com")
    await page.get_by_label("Chat message").fill("Look it up, then email Bo.")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_text("Let me look that up first.")).to_be_visible()
    await wait_for_tool_start(tool_log, slow_runs + 1)

    await page.reload()  # mid-turn: useChat resumes the turn's stream
    await expect(page.get_by_text("Look it up, then email Bo.")).to_be_visible()
    await expect(page.get_by_text("Let me look that up first.")).to_be_visible()

    part = page.locator('.tool-part[data-tool-call-id="mail-1"]')
    await expect(part).to_have_attribute("data-state", "approval-requested", timeout=30_000)
    await expect(part).to_contain_text("bo@example.com")
    await expect(page.locator('.tool-part[data-tool-call-id="slow-1"]')).to_contain_text("done")
    await screenshot(page, "viewer-chat.png")
    assert len([e for e in tool_log.entries("send_email") if e["to"] == "bo@example.com"]) == 0

    await part.get_by_role("button", name="Approve").click()
    await expect(page.get_by_text("Done: the email to bo@example.com is sent.")).to_be_visible()
    await expect(part).to_have_attribute("data-state", "output-available")
    await expect(part).to_contain_text("sent to bo@example.com")
    await expect(page.locator("[data-chat-status]")).to_have_text("ready")

    snapshot = await client.get_agent_snapshot(session_id)
    assert snapshot.state is not None and snapshot.state.turn_count == 1
    assert snapshot.messages[-1].text == "Done: the email to bo@example.com is sent."
    history = await client.get_step_history(session_id)
    calls = [s for s in history if s.step_type == "CallSingleAttemptTool"]
    assert [s.status for s in calls] == ["succeeded"]
    assert len([e for e in tool_log.entries("send_email") if e["to"] == "bo@example.com"]) == 1


async def test_viewer_says_an_unknown_session_does_not_exist(
    page: Page, server: ServeProcess
) -> None:
    await page.goto(f"{server.base_url}/#token={server.token}")
    await page.goto(f"{server.base_url}/#/sessions/session-does-not-exist")
    await expect(page.get_by_role("alert").first).to_contain_text(
        re.compile("session-does-not-exist|not found", re.IGNORECASE)
    )
    missing = page.locator('[data-missing-session="session-does-not-exist"]')
    await expect(missing).to_contain_text("No session has this ID")
    # Nothing pretends the session is there: no connection, no message box, no Step history.
    await expect(page.locator(".connection")).to_have_count(0)
    await expect(page.get_by_label("Message")).to_have_count(0)
    await expect(page.locator(".timeline")).to_have_count(0)


async def test_viewer_without_the_token_reports_the_401(
    browser: Browser, server: ServeProcess
) -> None:
    context = await browser.new_context()
    tab = await context.new_page()
    await tab.goto(f"{server.base_url}/")
    await expect(tab.get_by_role("alert").first).to_contain_text(
        "The server refused the request (401)"
    )
    await expect(tab.get_by_label("Token")).to_be_visible()
    # A Worker runs: the page claims nothing it could not read, and does not load forever.
    await expect(tab.get_by_text("No Worker is running")).to_have_count(0)
    await expect(tab.get_by_text("Loading…")).to_have_count(0)
    await expect(tab.locator('link[rel="icon"]')).to_have_count(1)
    await context.close()


async def test_viewer_warns_about_a_flow_type_no_worker_hosts_and_shows_the_message(
    page: Page, server: ServeProcess, client: AgentClient, workdir: Path
) -> None:
    await page.goto(f"{server.base_url}/#token={server.token}")
    form = page.locator("form.new-session")
    await form.get_by_label("Flow type").fill("Nobody")
    await form.get_by_label("First message").fill("Is anyone there?")
    await form.get_by_role("button", name="Start session").click()
    warning = page.locator('[data-not-hosted="Nobody"]')
    await expect(warning).to_contain_text(
        "No running Worker hosts flow type Nobody", timeout=30_000
    )
    pending = page.locator('[data-role="pending-start"]')
    await expect(pending).to_contain_text("Is anyone there?")
    await expect(page.locator(".session-head .badge")).to_have_text("starting")
    session_id = page.url.rsplit("/", 1)[-1]
    snapshot = await client.get_agent_snapshot(session_id)
    assert snapshot.state is None
    # The server's console says it in one line, without a Python warning's source line.
    log = (workdir / "serve.log").read_text()
    assert f"session {session_id}: no live Worker hosts flow type 'Nobody'" in log
    assert "FlowTypeNotHostedWarning" not in log and "warnings.warn" not in log


async def test_viewer_shows_a_session_waiting_for_approval_and_how_long_the_step_waited(
    page: Page, server: ServeProcess, client: AgentClient, model: ScriptedModelServer
) -> None:
    model.enqueue(
        reply_tools(("wa-1", "send_email", {"to": "eve@example.com", "body": "Hi"})),
        reply_text("Eve has the email."),
    )
    session_id = await client.start_session("Assistant", "Email Eve.")
    await page.goto(f"{server.base_url}/#token={server.token}")
    row = page.locator(f'tr[data-session-id="{session_id}"]')
    await expect(row.locator(".badge")).to_have_text("waiting for approval", timeout=30_000)
    await expect(row.locator(".badge")).to_have_attribute("data-status", "running_tools")
    await page.get_by_label(re.compile("Only those waiting for you")).check()
    rows = page.locator("table.sessions tbody tr")
    assert await rows.count() >= 1
    for waiting_for in await rows.evaluate_all("rows => rows.map(r => r.dataset.waitingFor)"):
        assert waiting_for in ("approval", "answer")  # the filter shows only those
    await expect(rows.first).to_have_attribute("data-waiting-for", re.compile("approval|answer"))

    await row.get_by_role("link").click()
    await expect(page.locator(".session-head .badge")).to_have_text("waiting for approval")
    step = page.locator('[data-step-type="AwaitToolApproval"]')
    await expect(step).to_contain_text(re.compile(r"waiting for an approval since .* so far"))
    resume = page.locator('[data-step-type="ResumeTurn"]').last
    await expect(resume).to_contain_text("waiting for the turn's tool results since")
    await asyncio.sleep(1.0)  # the wait the history must show
    await (
        page.locator('.interrupt[data-interrupt-id="wa-1"]')
        .get_by_role("button", name="Approve")
        .click()
    )
    await expect(page.get_by_text("Eve has the email.")).to_be_visible(timeout=30_000)
    await expect(step).to_contain_text(re.compile(r"\d+\.\d s"))

    history = await client.get_step_history(session_id)
    [approval] = [s for s in history if s.step_type == "AwaitToolApproval"]
    assert approval.started_at == approval.scheduled_at and approval.ended_at is not None
    ended, started = (
        datetime.fromisoformat(approval.ended_at),
        datetime.fromisoformat(approval.started_at or ""),
    )
    waited = (ended - started).total_seconds()
    assert waited >= 1.0
    assert [s.step_execution_id for s in history] == sorted(
        (s.step_execution_id for s in history), key=lambda sx: int(sx.rpartition("-")[2])
    )


async def test_viewer_shows_a_tool_error_and_a_failed_turn_as_failures(
    page: Page,
    server: ServeProcess,
    client: AgentClient,
    model: ScriptedModelServer,
    tool_log: ToolRunLog,
) -> None:
    model.enqueue(
        reply_tools(("b1", "broken_tool", {})),
        reply_text("The tool is broken."),
        # The model call fails on each of its three attempts: the turn fails.
        *[ScriptedReply(status=400, text="the model refused this request")] * 3,
    )
    session_id = await client.start_session("Assistant", "Use the broken tool.")
    await page.goto(f"{server.base_url}/#token={server.token}")
    await page.goto(f"{server.base_url}/#/sessions/{session_id}")
    await expect(page.get_by_text("The tool is broken.")).to_be_visible(timeout=60_000)
    result = page.locator('.message.tool[data-tool-call-id="b1"]')
    await expect(result).to_have_class(re.compile("tool-error"))
    await expect(result.locator(".badge")).to_have_text("failed")
    await expect(result.locator(".meta")).to_contain_text("tool error")
    await page.reload()  # the turn is over: its tool call's record is gone, its message says it
    await expect(result.locator(".badge")).to_have_text("failed")

    await page.get_by_label("Message").fill("Again, please.")
    await page.get_by_role("button", name="Send").click()
    failure = page.locator('[data-step-type="RecordTurnFailure"] [data-recovery]')
    await expect(failure).to_contain_text("the model refused this request", timeout=30_000)
    await expect(page.locator('[data-step-type="RecordTurnFailure"] .hint')).not_to_contain_text(
        '{"input"'
    )
    assert tool_log.count("broken_tool") >= 1


async def test_viewer_warns_about_a_write_whose_outcome_is_unknown(
    page: Page,
    server: ServeProcess,
    client: AgentClient,
    model: ScriptedModelServer,
    tool_log: ToolRunLog,
    worker: WorkerProcess,
) -> None:
    model.enqueue(
        reply_tools(("uw-1", "slow_write", {"seconds": 60})),
        reply_text("The write may or may not have happened."),
    )
    session_id = await client.start_session("Assistant", "Write it.")
    await page.goto(f"{server.base_url}/#token={server.token}")
    await page.goto(f"{server.base_url}/#/sessions/{session_id}")
    call = page.locator('.tool-call[data-tool-call-id="uw-1"]')
    await expect(call).to_contain_text("non idempotent write", timeout=30_000)
    await wait_for_tool_start(tool_log, 1, "slow_write")

    worker.kill()  # the write may have taken effect: it must not run again
    worker.start()

    await expect(page.get_by_text("The write may or may not have happened.")).to_be_visible(
        timeout=30_000
    )
    result = page.locator('.message.tool[data-tool-call-id="uw-1"]')
    await expect(result.locator(".badge")).to_have_text("⚠ outcome unknown")
    await expect(result.locator(".warning")).to_contain_text("will not run again")
    await expect(page.locator('[data-step-type="RecordToolOutcomeUnknown"]')).to_be_visible()
    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started"]
    assert "RecordToolOutcomeUnknown" in await step_types(client, session_id)


async def test_new_session_form_shows_the_api_error_then_starts_a_session(
    page: Page, server: ServeProcess, client: AgentClient, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_text("Hello from the form."))
    await page.goto(f"{server.base_url}/#token={server.token}")
    form = page.locator("form.new-session")
    await form.get_by_label("Flow type").fill("   ")
    await form.get_by_label("First message").fill("Hi there")
    await form.get_by_role("button", name="Start session").click()
    await expect(form.get_by_role("alert")).to_have_text("flow_type must not be blank")
    assert page.url.endswith("/#/")  # still on the list: nothing started

    await form.get_by_label("Flow type").fill("Assistant")
    await form.get_by_role("button", name="Start session").click()
    await expect(page.get_by_text("Hello from the form.")).to_be_visible(timeout=30_000)
    session_id = page.url.rsplit("/", 1)[-1]
    snapshot = await client.get_agent_snapshot(session_id)
    assert [m.text for m in snapshot.messages] == ["Hi there", "Hello from the form."]


async def test_viewer_steers_then_cancels_a_turn_that_waits_for_an_approval(
    page: Page,
    server: ServeProcess,
    client: AgentClient,
    model: ScriptedModelServer,
    tool_log: ToolRunLog,
) -> None:
    model.enqueue(
        reply_tools(("st-1", "send_email", {"to": "cy@example.com", "body": "Hi"})),
        reply_text("OK, no email to Cy."),
        reply_tools(("cx-1", "send_email", {"to": "di@example.com", "body": "Hi"})),
    )
    session_id = await client.start_session("Assistant", "Email Cy.")
    await page.goto(f"{server.base_url}/#token={server.token}")
    await page.goto(f"{server.base_url}/#/sessions/{session_id}")
    status = page.locator(".session-head .badge")

    await expect(page.locator('.interrupt[data-interrupt-id="st-1"]')).to_be_visible(timeout=30_000)
    await page.get_by_label("Message").fill("Don't email anyone.")
    await page.get_by_role("button", name="Steer").click()
    await expect(page.get_by_text("OK, no email to Cy.")).to_be_visible(timeout=30_000)
    await expect(page.locator(".interrupt")).to_have_count(0)
    await expect(status).to_have_text("waiting for user message")

    await page.get_by_label("Message").fill("Email Di.")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator('.interrupt[data-interrupt-id="cx-1"]')).to_be_visible(timeout=30_000)
    await page.get_by_role("button", name="Cancel turn").click()
    await expect(page.locator(".interrupt")).to_have_count(0)
    await expect(status).to_have_text("waiting for user message")
    await expect(page.get_by_role("button", name="Cancel turn")).to_have_count(0)

    events = await client.read_events(session_id)
    ends = [e.type for e in events if e.type.startswith("turn_") and e.type != "turn_started"]
    assert ends == ["turn_steered", "turn_completed", "turn_cancelled"]
    recipients = {e["to"] for e in tool_log.entries("send_email")}
    assert not recipients & {"cy@example.com", "di@example.com"}
