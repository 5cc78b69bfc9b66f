"""The READMEs' Python snippets run as pasted.

Every ```python block of the repository's READMEs (the root one, each package's, each
example's) must compile as a module: `compile()` refuses top-level `await` and `async with`
("'await' outside function"), which would not run as pasted either. (`ast.parse` alone accepts
them: the check is the compiler's.)

A block is a *complete program* when every name it reads is bound in the block (imported,
assigned, defined, a parameter) or is a builtin. Other blocks are fragments that show a call
in passing, such as `flow = AgentSessionFlow(PydanticAiRunner(agent), ...)`, and are only
parsed. The complete programs of the root README and of this package's README whose imports are
installed here run as the README says, with the scripted model server as the model:

- a block whose first line names a file (`# agent_app.py`) is saved under that name, so that
  later blocks and the Worker import it; another block is saved as `block_<n>.py`;
- a block that defines `flows` is a Worker module: one `dex-agents worker` process hosts the
  flows of all of them, as the README's shell commands start it;
- a block that calls `asyncio.run(...)` is a script: it runs as a process of its own, in the
  same working directory and database, and what it prints is checked (`SCRIPT_OUTPUT`);
- any other complete block is executed once and must not raise.

A complete program that imports an adapter runs in that adapter's tests (its test_readme.py).
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from dex_agents import AgentClient
from dex_agents.testing import ScriptedModelServer, WorkerProcess

ROOT = Path(__file__).resolve().parents[4]
PACKAGE_README = ROOT / "agents" / "python" / "core" / "README.md"
RUN_HERE = [ROOT / "README.md", PACKAGE_README]
ALL_READMES = sorted(
    [
        ROOT / "README.md",
        *ROOT.glob("agents/python/*/README.md"),
        *ROOT.glob("examples/*/README.md"),
    ]
)

# Adapter packages, whose own tests run the complete programs that import them.
RUN_ELSEWHERE = {"dex_agents_pydantic_ai", "dex_agents_openai_agents", "pydantic_ai", "agents"}

# What each script prints, line by line; a complete script missing here fails the test.
SCRIPT_OUTPUT = {
    "chat.py": [
        '{"city": "Paris", "sky": "sunny"}',
        'completed {"city": "Paris", "sky": "sunny"} 2',
    ],
    "embedded.py": ['completed {"city": "Paris", "sky": "sunny"}'],
}


@dataclass
class Block:
    readme: Path
    line: int  # of the opening fence
    code: str

    @property
    def where(self) -> str:
        return f"{self.readme.relative_to(ROOT)}:{self.line}"

    @property
    def file_name(self) -> str | None:
        first = self.code.splitlines()[0] if self.code else ""
        found = re.fullmatch(r"#\s*([\w/]+\.py)\s*", first)
        return found.group(1) if found else None


def python_blocks(readme: Path) -> list[Block]:
    text = readme.read_text()
    return [
        Block(readme, text.count("\n", 0, match.start()) + 1, match.group(1))
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)
    ]


def free_names(tree: ast.Module) -> set[str]:
    """The names the block reads but never binds (scopes flattened: enough for snippets)."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound - set(dir(builtins))


def imported_modules(tree: ast.Module) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.split(".")[0])
    return modules


def calls_asyncio_run(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "asyncio"
        for node in ast.walk(tree)
    )


def defines_flows(tree: ast.Module) -> bool:
    assigned = (t for node in tree.body if isinstance(node, ast.Assign) for t in node.targets)
    return any(isinstance(target, ast.Name) and target.id == "flows" for target in assigned)


@pytest.mark.parametrize("readme", ALL_READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_compiles_without_top_level_await(readme: Path) -> None:
    for block in python_blocks(readme):
        try:
            compile(block.code, block.where, "exec", dont_inherit=True)
        except SyntaxError as error:
            line = block.line + (error.lineno or 0)
            pytest.fail(f"{readme.relative_to(ROOT)}:{line}: {error.msg}; wrap it in a function")


async def test_the_complete_programs_of_the_readmes_run(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    modules: list[str] = []  # Worker modules
    scripts: list[Block] = []
    for number, block in enumerate(b for readme in RUN_HERE for b in python_blocks(readme)):
        tree = ast.parse(block.code)
        if free_names(tree):
            continue  # a fragment
        missing = {m for m in imported_modules(tree) if not _installed(m, tmp_path)}
        if missing:
            assert missing <= RUN_ELSEWHERE, f"{block.where} imports {missing}, not installed"
            continue
        name = block.file_name or f"block_{number}.py"
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code)
        if defines_flows(tree):
            modules.append(name.removesuffix(".py").replace("/", "."))
        elif calls_asyncio_run(tree):
            assert name in SCRIPT_OUTPUT, f"{block.where}: say what {name} prints in SCRIPT_OUTPUT"
            scripts.append(block)
        else:
            exec(compile(block.code, block.where, "exec"), {"__name__": "snippet"})
    assert modules and scripts, "no complete program found: has the convention changed?"

    # One Worker hosts every module's flows, as `dex-agents worker agent_app:flows` would.
    imports = "\n".join(f"from {m} import flows as flows_{i}" for i, m in enumerate(modules))
    flows = ", ".join(f"*flows_{i}" for i in range(len(modules)))
    (tmp_path / "readme_flows.py").write_text(f"{imports}\nflows = [{flows}]\n")
    database_url = f"sqlite:///{tmp_path / 'dex_agents.sqlite'}"  # the README's default
    env = {k: v for k, v in os.environ.items() if k != "DEX_AGENTS_DATABASE_URL"}
    env.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="scripted")
    worker = WorkerProcess(
        "readme_flows:flows",
        database_url=database_url,
        cwd=tmp_path,
        env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "scripted"},
        log_path=tmp_path / "worker.log",
    )
    with worker:
        async with AgentClient(database_url) as client:
            [hosting] = await client.list_workers()
        for block in scripts:
            name = block.file_name or ""
            run = subprocess.run(
                [sys.executable, name],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert run.returncode == 0, f"{block.where}: {name} failed:\n{run.stderr}"
            assert run.stdout.splitlines() == SCRIPT_OUTPUT[name], f"{block.where}: {name}"
    # The Stepwise module's flows loaded too: its agent is served by the same Worker.
    assert {"Weather", "Assistant"} <= set(hosting.flow_types)


def _installed(module: str, directory: Path) -> bool:
    return (directory / f"{module}.py").exists() or importlib.util.find_spec(module) is not None
