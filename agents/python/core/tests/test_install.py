"""Every README's install lines work as written, in a fresh virtual environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
READMES = sorted(ROOT.glob("agents/python/*/README.md"))
# What each package's README installs, and a module that must then import.
IMPORTS = {
    "claude-agent-sdk": "dex_agents_claude_agent_sdk",
    "core": "dex_agents.stepwise",
    "google-adk": "dex_agents_google_adk",
    "langgraph": "dex_agents_langgraph",
    "openai-agents": "dex_agents_openai_agents",
    "pydantic-ai": "dex_agents_pydantic_ai",
}


def install_lines(readme: Path) -> list[str]:
    """The shell lines of the README's block that builds the wheels and installs from them."""
    blocks = re.findall(r"```sh\n(.*?)```", readme.read_text(), flags=re.S)
    (block,) = [b for b in blocks if b.startswith("scripts/build.sh")]
    lines = (line.split("  #")[0].strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.parent.name)
def test_readme_install_lines_work_verbatim_in_a_fresh_venv(readme, tmp_path):
    environment = tmp_path / "venv"
    venv.create(environment)  # uv pip installs into it (VIRTUAL_ENV)
    bin_dir = environment / "bin"
    # The machine's uv, as on a machine that has it (scripts/build.sh installs it otherwise).
    uv = shutil.which("uv")
    assert uv is not None
    path = f"{bin_dir}:{Path(uv).parent}:{os.environ['PATH']}"
    for line in install_lines(readme):
        result = subprocess.run(
            line,
            shell=True,
            cwd=ROOT,
            env={**os.environ, "PATH": path, "VIRTUAL_ENV": str(environment)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
    module = IMPORTS[readme.parent.name]
    check = subprocess.run(
        [str(bin_dir / "python"), "-c", f"import {module}; print({module}.__file__)"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith(str(environment))  # installed in the venv, from a wheel
