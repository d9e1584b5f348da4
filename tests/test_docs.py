"""The tutorial's code runs (sqlite-utils' test_docs habit): every ```python block of
docs/tutorial.md, in order, in one namespace, from a temporary folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_tutorial_blocks_run(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pandas")
    pytest.importorskip("networkx")
    text = (ROOT / "docs" / "tutorial.md").read_text()
    blocks = BLOCK.findall(text)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    ns = {"EXAMPLES": ROOT / "examples"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/tutorial.md block {i + 1}", "exec"), ns)
    out = capsys.readouterr().out
    assert "p(Raf is an ancestor of Mek)" in out and "effective sample size" in out
    assert "p_zero" in out and "effect_level" in out  # section 5: causal effects
    for name in ("sachs-heatmap.png", "sachs-graph.png"):
        assert (tmp_path / name).stat().st_size > 10_000
