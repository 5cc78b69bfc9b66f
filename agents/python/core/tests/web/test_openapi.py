"""The OpenAPI document tells the truth: schemathesis, bounded, against a real `dex-agents
serve` process with the server's token. Its positive cases (every request the schema admits
is accepted or answered 404 for an unknown session) and negative cases (every request it
rejects gets a 4xx), the documented status codes, content types and response schemas, and
405 with an `Allow` that lists exactly the path's methods (OPTIONS lists them too).

Left out: `GET .../events` and `POST .../chat`, which stream until the client leaves (no
Worker runs here to end a turn); test_api.py and test_ui_stream.py cover them."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dex_agents.testing import ServeProcess

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Small and fixed: the same cases each run, in well under a minute.
MAX_EXAMPLES = 6
SEED = 20261206
# The routes that stream until the client leaves.
EXCLUDED = "(/events|/chat)$"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    db_url = f"sqlite:///{tmp_path_factory.mktemp('openapi') / 'dex.sqlite'}"
    with ServeProcess(db_url) as serve:
        yield serve


def test_schemathesis_finds_no_request_the_schema_misdescribes(
    server: ServeProcess, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run"]
    command += [f"{server.base_url}/openapi.json", "-H", f"Authorization: Bearer {server.token}"]
    command += ["--checks", "all", "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED)]
    command += ["--workers", "1", "--exclude-path-regex", EXCLUDED, "--no-color"]
    # In a directory of its own: schemathesis keeps a cache of past failures where it runs,
    # and replays them first; each run starts from none.
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-20_000:] + result.stderr[-5_000:]
    summary = result.stdout[result.stdout.index("SUMMARY") :]
    paths = httpx.get(f"{server.base_url}/openapi.json").json()["paths"]
    tested = sum(len(ops) for path, ops in paths.items() if not re.search(EXCLUDED, path))
    assert f"Tested: {tested}" in summary, summary
    for phase in ("Coverage", "Fuzzing", "Stateful"):  # the negative cases are Coverage's
        assert f"✅ {phase}" in summary, summary
    generated = re.search(r"(\d+) generated, (\d+) passed", summary)
    assert generated and generated[1] == generated[2] and int(generated[1]) > 300, summary
    assert "No issues found" in summary


def test_options_and_other_methods_answer_with_the_paths_methods(server: ServeProcess) -> None:
    cases = [
        ("/api/sessions", "GET, POST, OPTIONS"),
        ("/api/sessions/s1/cancel", "POST, OPTIONS"),
        ("/api/sessions/s1/messages", "GET, POST, OPTIONS"),
        ("/api/sessions/s1/queued-messages/m1", "DELETE, OPTIONS"),
    ]
    with httpx.Client(base_url=server.base_url, headers=server.headers) as http:
        for path, allow in cases:
            options = http.options(path)
            assert (options.status_code, options.headers["allow"]) == (204, allow)
            patch = http.patch(path, json={})
            assert (patch.status_code, patch.headers["allow"]) == (405, allow)
            assert patch.json()["error"]["code"] == "method_not_allowed"
        missing = http.get("/api/no-such-route")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"
        assert http.get("/").status_code == 200  # the viewer still answers at /
