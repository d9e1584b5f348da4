"""Every code block of README.md and docs/*.md runs as a reader pastes it (sqlite-utils'
test_docs habit, taken further).

Per page, in a fresh temporary folder holding a copy of the repository's examples/ and
scripts/:
```bash blocks run in a shell (`bash -e -o pipefail`), `bigbn` on PATH; ```python blocks
run in order in ONE fresh interpreter per page, as a reader pastes them into one session
— nothing is defined for them. A block followed directly by a plain ``` block (or
```text) is compared with it: the lines it prints must be those shown ("..." in a shown
line stands for any text: times, paths). Blocks in any other language are not code.

The README's "Quick start" blocks are CI's (.ci/run installs and runs them in a fresh
clone); here only its `bigbn ...` command runs, so that the blocks after it find the
workdir it makes. A block that cannot run here (a cluster address, a 20-minute study)
starts with the visible line ``# not run by the docs test: WHY``; there are few.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*\n?", re.S | re.M)
RUNNABLE = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python"}
OUTPUT = ("", "text")
SKIP = re.compile(r"^# not run by the docs test: (\S.*)$")
MAX_SKIPPED = 8
#: pages whose blocks take long (numba compiles, runs, samples): pytest -m "not slow" skips them
SLOW = {"README.md", "docs/tutorial.md", "docs/real_networks.md", "docs/posterior.md", "docs/cluster.md"}
QUICK_START = "## Quick start"
BLOCK_SECONDS = 1800


@dataclass
class Block:
    page: str
    line: int
    lang: str           # "bash" or "python"
    code: str
    output: str | None  # the text shown right after it, if any
    skip: str | None    # why it is not run, from its first line
    quick_start: bool = False

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    """The runnable blocks of ``page`` in order, each with the output shown after it.
    A plain ``` block that follows no runnable block is refused: every code block says
    what it is."""
    text = (ROOT / page).read_text(encoding="utf-8")
    quick = _section_span(text, QUICK_START)
    out: list[Block] = []
    last_end = None
    for m in FENCE.finditer(text):
        lang, body = m.group(1).lower(), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if lang in OUTPUT and out and last_end is not None and not text[last_end:m.start()].strip():
            out[-1].output = body
        elif lang in RUNNABLE:
            first = body.split("\n", 1)[0]
            skip = SKIP.match(first)
            out.append(Block(page, line, RUNNABLE[lang], body, None, skip and skip.group(1),
                             quick[0] <= m.start() < quick[1]))
        elif lang == "":
            raise AssertionError(f"{page}:{line}: a code block without a language that follows no "
                                 "code: label it ```bash, ```python or ```text")
        last_end = m.end() if lang in RUNNABLE else None
    return out


def _section_span(text: str, heading: str) -> tuple[int, int]:
    """(start, end) of the section whose heading line starts with ``heading``."""
    m = re.compile("^" + re.escape(heading) + ".*$", re.M).search(text)
    if m is None:
        return (0, 0)
    nxt = re.compile(r"^## ", re.M).search(text, m.end())
    return (m.start(), nxt.start() if nxt else len(text))


def shown_matches(shown: str, printed: str) -> bool:
    """Whether the printed lines are the shown ones ("..." stands for any text)."""
    a = [x.rstrip() for x in shown.strip("\n").split("\n")]
    b = [x.rstrip() for x in printed.strip("\n").split("\n")]
    return len(a) == len(b) and all(
        re.fullmatch(".*".join(map(re.escape, s.split("..."))), p) is not None for s, p in zip(a, b))


# ------------------------------------------------------------------------------ a reader

DRIVER = r'''
import builtins, contextlib, io, json, sys, traceback
ns = {"__name__": "__main__", "__builtins__": builtins}
proto = sys.stdout
for request in sys.stdin:
    block = json.loads(request)
    out, error = io.StringIO(), None
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block["code"], block["where"], "exec"), ns)
    except BaseException:
        error = traceback.format_exc()
    proto.write("\0DOCS\0" + json.dumps({"out": out.getvalue(), "error": error}) + "\n")
    proto.flush()
'''


class Reader:
    """One page's session: a shell for bash blocks and one Python interpreter for all its
    python blocks, in a folder with the repository's examples/."""

    def __init__(self, folder: Path):
        self.folder = folder
        for sub in ("examples", "scripts"):  # what a reader's checkout holds beside the docs
            shutil.copytree(ROOT / sub, folder / sub, ignore=shutil.ignore_patterns("__pycache__"))
        bindir = folder.parent / "bin"
        bindir.mkdir(exist_ok=True)
        for name, run in (("bigbn", "-m bigbn.cli"), ("python", "")):  # as an activated venv has them
            shim = bindir / name
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {run} "$@"\n')
            shim.chmod(0o755)
        self.env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
                    "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PYTHONWARNINGS": "default"}
        self.python = None

    def run(self, block: Block) -> str:
        return self._bash(block) if block.lang == "bash" else self._python(block)

    def _bash(self, block: Block) -> str:
        code = block.code
        if block.quick_start:  # CI installs; here only its bigbn commands
            code = "\n".join(c.strip() for line in code.splitlines() for c in line.split("&&")
                             if c.strip().startswith("bigbn "))
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=self.folder, env=self.env,
                           capture_output=True, text=True, timeout=BLOCK_SECONDS)
        assert r.returncode == 0, f"{block.where}: exit {r.returncode}\n{code}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r.stdout

    def _python(self, block: Block) -> str:
        if self.python is None:
            self.python = subprocess.Popen([sys.executable, "-u", "-c", DRIVER], cwd=self.folder, env=self.env,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.python.stdin.write(json.dumps({"code": block.code, "where": block.where}) + "\n")
        self.python.stdin.flush()
        watchdog = threading.Timer(BLOCK_SECONDS, self.python.kill)  # a hung block fails, not the suite
        watchdog.start()
        try:
            for line in self.python.stdout:
                if line.startswith("\0DOCS\0"):
                    reply = json.loads(line[6:])
                    break
            else:
                raise AssertionError(f"{block.where}: the interpreter died (or ran over {BLOCK_SECONDS} s)")
        finally:
            watchdog.cancel()
        assert reply["error"] is None, f"{block.where}:\n{block.code}\n{reply['error']}"
        return reply["out"]

    def close(self):
        if self.python is not None:
            self.python.stdin.close()
            self.python.wait(timeout=60)


# ------------------------------------------------------------------------------ the tests

def test_every_code_block_says_what_it_is_and_few_are_skipped():
    every = [b for p in PAGES for b in blocks(p)]
    assert len(every) >= 25
    skipped = [b for b in every if b.skip]
    assert len(skipped) <= MAX_SKIPPED, [b.where for b in skipped]
    quick = [b for b in every if b.quick_start]
    assert [b.page for b in quick] == ["README.md", "README.md"] and "bigbn run" in quick[0].code
    for b in every:  # no name a reader never defined (the test used to inject EXAMPLES)
        assert "EXAMPLES" not in b.code, b.where


def test_shown_output_is_compared_line_by_line():
    assert shown_matches("a 1\nb ...\n", "a 1\nb 2.5 s\n")
    assert not shown_matches("a 1\n", "a 2\n")
    assert not shown_matches("a 1\n", "a 1\nb\n")
    assert shown_matches("x ... y ... z", "x 1 y 2 z")
    assert not shown_matches("x (1)", "x 1")  # no other pattern than ...


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW else p for p in PAGES])
def test_the_pages_code_runs_as_pasted(page, tmp_path):
    todo = [b for b in blocks(page) if not b.skip]
    if not todo:
        pytest.skip(f"{page} has no code to run")
    reader = Reader(tmp_path / "page")
    try:
        for b in todo:
            printed = reader.run(b)
            if b.output is not None and not b.quick_start:
                assert shown_matches(b.output, printed), (
                    f"{b.where}: the page shows\n{b.output}\nbut the code prints\n{printed}")
    finally:
        reader.close()


LINK = re.compile(r"\]\(([^)\s]+)\)|<(?:img|a)\s[^>]*(?:src|href)=\"([^\"]+)\"")


def test_every_relative_link_of_the_docs_finds_its_file():
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for m in LINK.finditer(text):
            target = (m.group(1) or m.group(2)).split("#", 1)[0]
            if not target or re.match(r"[a-z]+:", target):
                continue
            line = text.count("\n", 0, m.start()) + 1
            assert (ROOT / page).parent.joinpath(target).exists(), f"{page}:{line}: {target} does not exist"
