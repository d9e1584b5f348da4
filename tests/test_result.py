"""`Result` on its own (bigbn/outputs/result.py): what its methods do with what a user hands them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bigbn.errors import OptionError
from bigbn.outputs.result import Result


def _result() -> Result:
    P = np.array([[0.0, 0.25], [0.5, 0.0]])
    return Result(P, ("a", "b"), -1.0)


def test_to_csv_into_a_folder_or_a_non_path_is_one_line(tmp_path):
    """Issue #37: Result.to_csv(<an existing folder>) raised IsADirectoryError."""
    res = _result()
    with pytest.raises(OptionError, match=re.escape(f"{tmp_path}: is a folder, not a file; give a "
                                                    f"file name (e.g. {tmp_path / 'edges.csv'})")):
        res.to_csv(tmp_path)
    with pytest.raises(OptionError, match=re.escape(f"cannot write {tmp_path / 'no' / 'e.csv'}: ")):
        res.to_csv(tmp_path / "no" / "e.csv")
    with pytest.raises(OptionError, match=r"^to_csv\(\) needs a file path, got NoneType$"):
        res.to_csv(None)
    res.to_csv(tmp_path / "e.csv")
    assert (tmp_path / "e.csv").read_text() == "parent,child,posterior\na,b,0.25\nb,a,0.5\n"


@pytest.mark.parametrize("threshold, needle", [
    (float("nan"), "threshold must be finite, got nan"),  # drew no arc, silently
    (1.5, "threshold must be in [0, 1], got 1.5"), (-1, "threshold must be in [0, 1], got -1"),
    ("0.5", "threshold must be a number, got '0.5'"),  # numpy's UFuncTypeError
    (10**400, "threshold must be finite, got a number of 401 digits"),  # OverflowError
])
def test_to_networkx_checks_its_threshold(threshold, needle):
    pytest.importorskip("networkx")
    with pytest.raises(OptionError, match=re.escape(needle)):
        _result().to_networkx(threshold)
    assert list(_result().to_networkx(0.5).edges) == [("b", "a")]


def test_averaged_refuses_a_threshold_beyond_float64():
    pytest.importorskip("networkx")
    with pytest.raises(OptionError, match=re.escape("the threshold is a probability in (0, 1], got 1000")):
        _result().averaged(10**400)


@pytest.mark.parametrize("top, needle", [(-1, "top must be ≥ 0"), (1.5, "top must be an integer, got 1.5"),
                                         ("2", "top must be an integer, got '2'"),
                                         (True, "top must be an integer, got True")])
def test_parent_sets_and_sampled_dags_check_top(top, needle):
    """top=-1 cut the last set off, silently (a slice [:-1]); 1.5 or '2' were TypeErrors."""
    from bigbn.outputs.samples import Samples

    res = Result(np.zeros((2, 2)), ("a", "b"), -1.0, families=np.array([0, 1]),
                 parent_set_posterior=np.array([[0.75, 0.25], [1.0, 0.0]]))
    assert res.parent_sets("a", top=1) == [((), 0.75)]
    with pytest.raises(OptionError, match=re.escape(needle)):
        res.parent_sets("a", top=top)
    s = Samples.__new__(Samples)
    with pytest.raises(OptionError, match=re.escape(needle)):
        s.dags(top)


def test_a_sample_is_named_by_its_index_and_with_se_is_a_flag():
    """Samples.to_networkx(5) of 5 samples, (1.5) or ('0') were numpy IndexErrors (and -1
    the last sample); edge_probabilities(with_se="no") gave (p, se)."""
    from bigbn.outputs.samples import Samples

    s = Samples(("a", "b"), np.array([[0, 1], [2, 0]]), np.full(2, 0.5), "order-modular", 0,
                np.zeros(2), np.zeros(2))
    pytest.importorskip("networkx")
    assert list(s.to_networkx(1).edges) == [("b", "a")]
    for t, needle in [(2, "sample t = 2 is not one of 0..1"), (-1, "sample t = -1 is not one of 0..1"),
                      (1.5, "t must be an integer, got 1.5"), ("0", "t must be an integer, got '0'")]:
        with pytest.raises(OptionError, match=re.escape(needle)):
            s.to_networkx(t)
    with pytest.raises(OptionError, match="with_se must be True or False, got 'no'"):
        s.edge_probabilities(with_se="no")


def test_python_writers_refuse_a_named_pipe_that_nothing_reads(tmp_path):
    """Result.to_csv(FIFO), Effects.to_csv(FIFO) and Knowledge.write(folder) with a FIFO in
    a file's place waited for a reader, forever (open() blocks), where the CLI's outputs
    (`options.open_output`) refuse it in one line. Run in a subprocess with a timeout, so
    that a wait fails the test instead of hanging it."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    (tmp_path / "k").mkdir()
    os.mkfifo(tmp_path / "k" / "forbid.csv")
    script = f"""
import numpy as np
from bigbn.errors import OptionError
from bigbn.knowledge import Knowledge
from bigbn.outputs.effects import Effects
from bigbn.outputs.result import Result

calls = [lambda: Result(np.array([[0.0, 0.25], [0.5, 0.0]]), ("a", "b"), -1.0).to_csv({str(fifo)!r}),
         lambda: Effects(("a", "b"), "continuous", [(0, 1)], 0.95, np.zeros(1), np.zeros(1), np.zeros(1),
                         np.zeros(1)).to_csv({str(fifo)!r}),
         lambda: Knowledge(forbidden=[("a", "b")]).write({str(tmp_path / "k")!r})]
for call in calls:
    try:
        call()
        print("written")
    except OptionError as e:
        print(e)
"""
    try:
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    except subprocess.TimeoutExpired:
        pytest.fail("a writer waited for a reader of the named pipe")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 3, r.stderr
    for line, path in zip(lines, [fifo, fifo, tmp_path / "k" / "forbid.csv"]):
        assert line == f"{path}: a named pipe that nothing reads (start the reader first, or give a file)", lines
