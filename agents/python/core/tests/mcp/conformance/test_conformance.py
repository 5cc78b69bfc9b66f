"""The client scenarios of the official MCP conformance suite (@modelcontextprotocol/conformance,
npm) that apply to a tool-calling client, run against client.py, which is dex_agents.mcp.

For each scenario the suite starts its own test server on loopback, runs
`python client.py <server-url>` with MCP_CONFORMANCE_SCENARIO set, and judges what the client
sent; the results land in checks.json.

Scenarios that do not apply: every auth/* scenario (an HttpServer sends only the static
headers the Worker's code configures; the source has no OAuth client), and
elicitation-sep1034-client-defaults (the client declines elicitation by design: a tool Step
cannot wait for the user inside one request; test_elicitation_is_declined shows the decline).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
CLIENT = HERE / "client.py"
SUITE_JS = HERE / "node_modules/@modelcontextprotocol/conformance/dist/index.js"

# Each applicable scenario and the checks it must report as SUCCESS.
APPLICABLE = {
    "initialize": {"mcp-client-initialization"},
    "tools_call": {"tool-add-numbers"},
    "sse-retry": {"client-sse-graceful-reconnect", "client-sse-last-event-id"},
}


@pytest.fixture(scope="module")
def suite_js() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the conformance suite is an npm package")
    if not SUITE_JS.is_file():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(HERE)],
            check=True,
            timeout=300,
        )
    return SUITE_JS


def run_scenario(suite_js: Path, scenario: str, output: Path) -> tuple[int, list[dict[str, Any]]]:
    """The suite's exit code and the checks it wrote for one client scenario."""
    options = {
        "--command": f"{sys.executable} {CLIENT}",
        "--scenario": scenario,
        "--timeout": "60000",
        "--output-dir": str(output),
    }
    run = subprocess.run(
        ["node", str(suite_js), "client", *(part for item in options.items() for part in item)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    (checks_file,) = output.glob("*/checks.json")
    checks: list[dict[str, Any]] = json.loads(checks_file.read_text())
    return run.returncode, checks


@pytest.mark.parametrize("scenario", sorted(APPLICABLE))
def test_applicable_client_scenario_passes(suite_js: Path, scenario: str, tmp_path: Path) -> None:
    returncode, checks = run_scenario(suite_js, scenario, tmp_path)

    failures = [c for c in checks if c["status"] == "FAILURE"]
    assert failures == [], json.dumps(failures, indent=2)
    succeeded = {c["id"] for c in checks if c["status"] == "SUCCESS"}
    assert APPLICABLE[scenario] <= succeeded
    assert returncode == 0


def test_elicitation_is_declined(suite_js: Path, tmp_path: Path) -> None:
    """Why elicitation-sep1034-client-defaults does not apply: the client does not offer
    elicitation, so the server's request fails and the tool reports it."""
    returncode, checks = run_scenario(suite_js, "elicitation-sep1034-client-defaults", tmp_path)

    general = next(c for c in checks if c["id"] == "client-elicitation-sep1034-general")
    assert general["status"] == "FAILURE"
    assert "Elicitation not supported" in general["errorMessage"]
    assert returncode != 0
