"""Every ```python block of README.md and docs/ runs as written: each block is a whole script, run in a fresh
interpreter in an empty directory. Training examples read FASTVEC_DOCS_BUDGET (the docs say so): "small" trains
for a few steps, so that these runs stay short. A block that is deliberately a fragment says so on the line
before it, ``<!-- not-runnable: reason -->``; those are counted, and must stay few."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import fastvec

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parent.parent
FASTVEC_HOME = pathlib.Path(fastvec.__file__).resolve().parent.parent
NOT_RUNNABLE = re.compile(r"<!--\s*not-runnable:\s*(\S.*?)\s*-->")
MAX_FRAGMENTS = 8  # fragments teach less than scripts: keep them few


def _doc_files() -> list[pathlib.Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _blocks() -> list[tuple[str, str, str | None]]:
    """(id "file:line", the block's code, the not-runnable reason or None) for each ```python block."""
    found = []
    for path in _doc_files():
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"^(\s*)```python\s*$", lines[i])
            if not m:
                i += 1
                continue
            indent, start = m.group(1), i
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            code = textwrap.dedent("\n".join(lines[start + 1 : j])) + "\n"
            before = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
            reason = NOT_RUNNABLE.search(before)
            found.append((f"{path.relative_to(ROOT)}:{start + 1}", code, reason.group(1) if reason else None))
            assert indent is not None
            i = j + 1
    return found


BLOCKS = _blocks()
# Ray's examples run in the worker that runs the other Ray tests, one Ray session at a time (pyproject's addopts).
RUNNABLE = [
    pytest.param(name, code, id=name, marks=[pytest.mark.xdist_group("ray")] if "ray" in code else [])
    for name, code, reason in BLOCKS
    if reason is None
]


def test_blocks_found_and_fragments_few() -> None:
    assert len(BLOCKS) >= 20, [name for name, _, _ in BLOCKS]
    fragments = [name for name, _, reason in BLOCKS if reason is not None]
    assert len(fragments) <= MAX_FRAGMENTS, fragments


@pytest.mark.parametrize(("name", "code"), RUNNABLE)
def test_block_runs(name: str, code: str, tmp_path: pathlib.Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    # The fastvec this test imported (the installed one in CI; the checkout, with its built module, in development).
    env = dict(os.environ, PYTHONPATH=str(FASTVEC_HOME), FASTVEC_DOCS_BUDGET="small", MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=200
    )
    assert proc.returncode == 0, (
        f"{name} failed:\n{code}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-5000:]}"
    )
