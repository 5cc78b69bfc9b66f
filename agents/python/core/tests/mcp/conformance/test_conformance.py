"""The client scenarios of the official MCP conformance suite (@modelcontextprotocol/conformance,
npm) that apply to a tool-calling client, run against client.py, which is dex_agents.mcp.

For each scenario the suite starts its own test server on loopback, runs
`python client.py <server-url>` with MCP_CONFORMANCE_SCENARIO (and MCP_CONFORMANCE_CONTEXT)
set, and judges what the client sent; the results land in checks.json. The suite runs on the
Node 22 that package.json installs from the npm registry.

Scenarios that do not apply:
- auth/*: an HttpServer sends only the static headers the Worker's code configures; the source
  has no OAuth client.
- elicitation-sep1034-client-defaults: the client declines elicitation by design (a tool Step
  cannot wait for the user inside one request); test_elicitation_is_declined shows the decline.
- sep-2322-client-request-state: an `input_required` answer to tools/call fails the call; the
  source does not retry with `inputResponses` and the echoed `requestState` (a follow-up).
- sep-2640-*: the skills extension, which is not tool calling.
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
NODE = HERE / "node_modules/.bin/node"
SUITE_JS = HERE / "node_modules/@modelcontextprotocol/conformance/dist/index.js"

# Each applicable scenario and the checks it must report as SUCCESS (and none may fail).
APPLICABLE = {
    "initialize": {"mcp-client-initialization"},
    "tools_call": {"tool-add-numbers", "wire-schema-valid"},
    "sse-retry": {"client-sse-graceful-reconnect", "client-sse-last-event-id"},
    "request-metadata": {
        "sep-2575-http-client-sends-version-header",
        "sep-2575-client-populates-meta",
        "sep-2575-client-sends-client-info",
        "sep-2575-http-version-header-matches-meta",
    },
    "http-standard-headers": {"sep-2243-client-includes-standard-headers"},
    # The source calls every tool it listed: the SDK dropped the invalid ones.
    "http-invalid-tool-headers": {"sep-2243-client-reject-invalid-tool"},
    "json-schema-ref-no-deref": {"sep-2106-no-network-ref-deref"},
    # The schema the model is offered is the server's, keyword for keyword.
    "json-schema-2020-12-preservation": {
        "json-schema-2020-12-client-echo-completed",
        "json-schema-2020-12-client-$schema-preserved",
        "json-schema-2020-12-client-$defs-preserved",
        "sep-2106-client-composition-keywords-preserved",
        "sep-2106-client-conditional-keywords-preserved",
    },
}


@pytest.fixture(scope="module")
def suite() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the conformance suite is an npm package")
    if not (SUITE_JS.is_file() and NODE.is_file()):
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(HERE)],
            check=True,
            timeout=300,
        )
    return SUITE_JS


def run_scenario(suite: Path, scenario: str, output: Path) -> tuple[int, list[dict[str, Any]]]:
    """The suite's exit code and the checks it wrote for one client scenario."""
    options = {
        "--command": f"{sys.executable} {CLIENT}",
        "--scenario": scenario,
        "--timeout": "60000",
        "--output-dir": str(output),
    }
    run = subprocess.run(
        [str(NODE), str(suite), "client", *(part for item in options.items() for part in item)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    (checks_file,) = output.glob("**/checks.json")
    checks: list[dict[str, Any]] = json.loads(checks_file.read_text())
    return run.returncode, checks


@pytest.mark.parametrize("scenario", sorted(APPLICABLE))
def test_applicable_client_scenario_passes(suite: Path, scenario: str, tmp_path: Path) -> None:
    returncode, checks = run_scenario(suite, scenario, tmp_path)

    failures = [c for c in checks if c["status"] == "FAILURE"]
    assert failures == [], json.dumps(failures, indent=2)
    succeeded = {c["id"] for c in checks if c["status"] == "SUCCESS"}
    assert APPLICABLE[scenario] <= succeeded
    assert returncode == 0


def test_custom_headers_are_mirrored(suite: Path, tmp_path: Path) -> None:
    """The SDK mirrors x-mcp-header arguments into Mcp-Param-* headers only for a tool listed
    on the same connection: a call lists on its own connection first."""
    returncode, checks = run_scenario(suite, "http-custom-headers", tmp_path)

    failures = [c for c in checks if c["status"] == "FAILURE"]
    assert failures == [], json.dumps(failures, indent=2)
    assert any(c["status"] == "SUCCESS" for c in checks)
    assert returncode == 0


def test_elicitation_is_declined(suite: Path, tmp_path: Path) -> None:
    """Why elicitation-sep1034-client-defaults does not apply: the client does not offer
    elicitation, so the server's request fails and the tool reports it."""
    returncode, checks = run_scenario(suite, "elicitation-sep1034-client-defaults", tmp_path)

    general = next(c for c in checks if c["id"] == "client-elicitation-sep1034-general")
    assert general["status"] == "FAILURE"
    assert "Elicitation not supported" in general["errorMessage"]
    assert returncode != 0
