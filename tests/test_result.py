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
