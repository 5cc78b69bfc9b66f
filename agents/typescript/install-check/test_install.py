"""The TypeScript packages as an application gets them: a fresh Node app, outside the
repository, installs every package from the tarballs `scripts/pack-typescript.sh` builds, with
the frameworks as its own dependencies. It must hold one copy of each framework (the packages'
peer dependencies), type-check one README example per package as the README has it, and run
the Vercel AI SDK package's example through a real Worker against the scripted model server.

A package packed with its `file:../core` dependency, without its dist/, or bringing its own copy
of `ai` (whose tools then do not fit the package's types) fails here."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dex_agents.client import AgentClient
from dex_agents.testing.model_server import ScriptedModelServer, reply_text, reply_tools
from dex_agents.testing.processes import WorkerProcess
from dex_agents.testing.shared_worker import responses

REPO = Path(__file__).resolve().parents[3]
TYPESCRIPT = REPO / "agents" / "typescript"
CORE = "@superdurable/dex-agents"

# Each framework the app installs, at the version the named package's devDependencies pin
# (its tests run against it): the versions its README's install line names.
FRAMEWORKS = {
    "ai": "vercel-ai",
    "zod": "vercel-ai",
    "@ai-sdk/openai": "vercel-ai",
    # Mastra 1.71.0 takes models of the AI SDK 6 provider spec (openai-compatible 2.x, as its
    # README says); the core's Stepwise takes those too.
    "@ai-sdk/openai-compatible": "mastra",
    "@mastra/core": "mastra",
    "@openai/agents": "openai-agents",
    "openai": "openai-agents",
    "@mariozechner/pi-ai": "pi",
    "@mariozechner/pi-agent-core": "pi",
    "@mariozechner/pi-coding-agent": "pi",
    "@anthropic-ai/claude-agent-sdk": "claude-agent-sdk",
    "typescript": "core",
    "@types/node": "core",
}
# Without optional dependencies: the Claude Agent SDK's CLI comes as an optional platform
# package of 409 MB, which a type check does not need (the package's own ci.sh runs the CLI).
# From the npm cache when it has the package, as every package's `npm ci` in CI.
NPM_INSTALL = ["npm", "install", "--prefer-offline", "--omit=optional", "--no-audit", "--no-fund"]

TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "target": "ES2022",
        "lib": ["ES2022"],
        "module": "NodeNext",
        "moduleResolution": "NodeNext",
        "types": ["node"],
        # The JavaScript examples are checked too.
        "allowJs": True,
        "checkJs": True,
        # The frameworks' own declaration files do not all check (Mastra's bundled AI SDK
        # types); every package's tsconfig skips them too.
        "skipLibCheck": True,
        "rootDir": "examples",
        "outDir": "out",
    },
    "include": ["examples"],
}


@dataclass(frozen=True)
class Example:
    """A README's code block: the first TypeScript or JavaScript block holding `marker`."""

    package: str
    file: str
    marker: str

    def source(self) -> str:
        readme = (TYPESCRIPT / self.package / "README.md").read_text()
        blocks = [m.group(1) for m in re.finditer(r"```(?:ts|js)\n(.*?)```", readme, re.DOTALL)]
        found = [block for block in blocks if self.marker in block]
        assert found, f"{self.package}/README.md has no code block with {self.marker!r}"
        return found[0]


EXAMPLES = [
    Example("core", "core.ts", "// agent.ts: a Stepwise agent"),
    Example("vercel-ai", "vercel-ai.ts", 'from "@superdurable/dex-agents-vercel-ai";'),
    Example("openai-agents", "openai-agents.js", 'from "@superdurable/dex-agents-openai-agents";'),
    Example("mastra", "mastra.mjs", "// server.mjs"),
    Example("pi", "pi.ts", "// agent.ts: pi-ai"),
    Example(
        "claude-agent-sdk",
        "claude-agent-sdk.ts",
        'from "@superdurable/dex-agents-claude-agent-sdk";',
    ),
]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs a command to its end, its output kept for the assertion that reads it."""
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)


def succeeded(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode == 0


def output_of(result: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(result.args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"


def pinned(name: str) -> str:
    manifest = json.loads((TYPESCRIPT / FRAMEWORKS[name] / "package.json").read_text())
    return f"{name}@{manifest['devDependencies'][name]}"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The application: the tarballs and the frameworks installed, the examples written."""
    root = tmp_path_factory.mktemp("install-check")
    assert not root.is_relative_to(REPO)
    tarballs = root / "tarballs"
    packed = run([str(REPO / "scripts" / "pack-typescript.sh"), str(tarballs)], cwd=REPO)
    assert succeeded(packed), output_of(packed)
    app = root / "app"
    app.mkdir()
    manifest = {"name": "install-check-app", "private": True, "type": "module"}
    (app / "package.json").write_text(json.dumps(manifest))
    packages = sorted(str(tarball) for tarball in tarballs.glob("*.tgz"))
    assert len(packages) == len(EXAMPLES), packages
    installed = run([*NPM_INSTALL, *packages, *map(pinned, FRAMEWORKS)], cwd=app)
    assert succeeded(installed), output_of(installed)
    (app / "tsconfig.json").write_text(json.dumps(TSCONFIG, indent=2))
    (app / "examples").mkdir()
    for example in EXAMPLES:
        (app / "examples" / example.file).write_text(example.source())
    return app


@pytest.fixture(scope="module")
def compiled(app: Path) -> subprocess.CompletedProcess[str]:
    """The examples type-checked and compiled into out/ (emitted even when a check fails)."""
    return run([str(app / "node_modules" / ".bin" / "tsc"), "-p", "."], cwd=app)


def copies(app: Path, name: str) -> list[Path]:
    return sorted(app.glob(f"**/node_modules/{name}/package.json"))


def test_the_app_holds_one_copy_of_each_framework_and_of_the_core(app: Path) -> None:
    tree = run(["npm", "ls"], cwd=app)  # exits non-zero on a missing or invalid dependency
    assert succeeded(tree), output_of(tree)
    core = json.loads((app / "node_modules" / CORE / "package.json").read_text())
    peers = set(core["peerDependencies"])
    for example in EXAMPLES[1:]:
        adapter = app / "node_modules" / f"{CORE}-{example.package}"
        manifest = json.loads((adapter / "package.json").read_text())
        assert manifest["dependencies"] == {CORE: core["version"]}
        peers |= set(manifest["peerDependencies"])
        assert (adapter / "dist" / "index.js").is_file()
        assert (adapter / "dist" / "index.d.ts").is_file()
    # The frameworks whose classes the packages' types share with the app's code: one copy.
    assert {"ai", "zod", "@mastra/core", "@openai/agents"} <= peers
    for name in sorted(peers | {CORE}):
        assert len(copies(app, name)) == 1, (name, copies(app, name))


def test_a_readme_example_of_each_package_type_checks(
    compiled: subprocess.CompletedProcess[str],
) -> None:
    assert succeeded(compiled), output_of(compiled)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the example exited with {process.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the example did not listen on {port} within {timeout} s")


@pytest.fixture
def vercel_ai_example(
    app: Path, compiled: subprocess.CompletedProcess[str], model: ScriptedModelServer
) -> Iterator[str]:
    """The Vercel AI SDK example in a Node process of its own: the URL of its runners."""
    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "scripted",
    }
    process = subprocess.Popen(["node", "out/vercel-ai.js"], cwd=app, env=env, text=True)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/dex"
    finally:
        process.kill()
        process.wait()


async def test_the_vercel_ai_example_runs_a_session_through_a_worker(
    vercel_ai_example: str,
    make_worker: Callable[..., WorkerProcess],
    client: AgentClient,
    model: ScriptedModelServer,
) -> None:
    make_worker(EXAMPLE_RUNNER_URL=vercel_ai_example).start()
    model.enqueue(
        reply_tools(("c1", "orderStatus", {"orderId": "A-7"})),
        reply_text("Order A-7 has shipped."),
        reply_tools(("c2", "refund", {"orderId": "A-7", "amountCents": 500})),
        reply_text("Refunded 5 dollars on A-7."),
    )
    first = await client.start_session_and_wait("SupportAgent", "Where is A-7?", timeout=60)
    assert first.status == "completed", first.error
    assert first.text == "Order A-7 has shipped."

    second = await client.run_turn(first.session_id, "Refund 5 dollars on it.", timeout=60)
    assert second.status == "waiting_for_interrupts"
    [interrupt] = second.interrupts
    assert interrupt.tool_name == "refund"  # it declares no effect: approval first
    assert await client.resolve_interrupt(second.session_id, interrupt.interrupt_id, approved=True)
    third = await client.wait_for_turn(
        second.session_id, second.turn_id, after=second.event_offset, timeout=60
    )
    assert third.text == "Refunded 5 dollars on A-7.", third.error

    # The example's openai(...) model: the Responses API of the installed @ai-sdk/openai.
    assert {request.path for request in model.requests} == {"/v1/responses"}
    assert responses.tool_outputs(model.requests[-1]) == {
        "c1": '{"orderId":"A-7","status":"shipped"}',
        "c2": "refunded 500 cents on A-7",
    }
    steps = [step.step_type for step in await client.get_step_history(third.session_id)]
    assert (steps.count("CallTool"), steps.count("CallSingleAttemptTool")) == (1, 1)
