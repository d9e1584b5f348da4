"""samples-PRIOR/samples.npz and its summary.json read and checked, as `bigbn sample`
(`samples.write_outputs`) writes them: by `bigbn.open` (`reopen.read_samples`) and by the
report page (`report._read_samples`), which showed the CSV files' samples beside a damaged
npz. Its own module, below both: the page must not import what imports the page (`result`)."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import numpy as np

from bigbn.errors import WorkdirError
from bigbn.kernels import sampling as SK
from bigbn.store.workdir import open_file, read_file

__all__ = ["load_samples"]


def load_samples(folder: Path, names, prior: str, log_marginal: float | None, again: str) -> tuple[dict, dict]:
    """(summary.json, the arrays of samples.npz) of the samples in ``folder`` (a
    samples-PRIOR/ of the run of variables ``names``), checked: both readable (a truncated
    or damaged npz, a missing one), the samples of these variables, whole (`_samples_damage`),
    and, when ``log_marginal`` (the run's log p(data)) is given, of this run. WorkdirError
    (one line naming the folder, ending in ``again``: how to rewrite them, and what then)."""
    try:
        info = json.loads(read_file(folder / "summary.json"))
        with open_file(folder / "samples.npz") as fh, np.load(fh) as z:
            arrays = {k: z[k] for k in ("names", "parents", "weights", "orders", "log_linear_extensions",
                                        "log_score")}
    except WorkdirError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
        raise WorkdirError(f"{folder} is damaged ({type(e).__name__}): {again}") from None
    if arrays["names"].ndim != 1 or tuple(str(s) for s in arrays["names"]) != tuple(names) \
            or arrays["parents"].ndim not in (2, 3) or arrays["parents"].shape[1] != len(names):
        raise WorkdirError(f"{folder}: the samples are not of this run's variables: {again}")
    wrong = _samples_damage(arrays, info, prior)
    if wrong:
        raise WorkdirError(f"{folder} is damaged ({wrong}): {again}")
    lml = info.get("log_marginal_likelihood")
    if log_marginal is not None and (not isinstance(lml, (int, float)) or
                                     abs(lml - log_marginal) > 1e-9 * max(1.0, abs(lml))):
        raise WorkdirError(f"{folder}: the samples are of another run (log p(data) {lml} vs the run's "
                           f"{log_marginal}): {again}")
    return info, arrays


def _samples_damage(arrays: dict, info, prior: str = "order-modular") -> str | None:
    """What is wrong with the arrays of samples.npz (names and parents' width checked) and
    its summary.json, as `write_outputs` writes them, else None: one length T and the
    types and shapes `Samples` holds; each order a permutation of the variables and each
    DAG's arcs along its order (`_against_orders`: the ancestors walk the orders, so an
    order out of range was a segfault, one that is no permutation or a DAG against it
    other ancestors without a word); finite scores and #LE; the weights ``prior`` gives
    them (1/T each, or ∝ 1/#LE); the seed, T and normaliser of the summary."""
    if not isinstance(info, dict):
        return "summary.json is not an object"
    T, n = arrays["parents"].shape[:2]
    shapes = {"parents": (np.int64, arrays["parents"].shape), "orders": (np.int64, (T, n)),
              "weights": (np.float64, (T,)), "log_linear_extensions": (np.float64, (T,)),
              "log_score": (np.float64, (T,))}
    for name, (dtype, shape) in shapes.items():
        if arrays[name].dtype != dtype or arrays[name].shape != shape:
            return f"{name} is {arrays[name].dtype} {arrays[name].shape}, not {np.dtype(dtype)} {shape}"
    if arrays["parents"].ndim == 2 and arrays["parents"].size and \
            not (arrays["parents"].min() >= 0 and arrays["parents"].max() >> n == 0):
        return f"parent sets beyond the {n} variables"
    if not (np.isfinite(arrays["weights"]).all() and (arrays["weights"] >= 0).all()):
        return "weights that are not finite and non-negative"
    wrong = _against_orders(arrays["orders"], arrays["parents"])
    if wrong:
        return wrong
    lle, w = arrays["log_linear_extensions"], arrays["weights"]
    if not (np.isfinite(lle).all() and (lle >= 0).all() and np.isfinite(arrays["log_score"]).all()):
        return "log #LE or log scores that are not finite"
    if T:
        r = np.exp(np.min(lle) - lle) if prior == "dag-modular" else np.ones(T)
        if not np.allclose(w, r / np.sum(r), rtol=1e-9, atol=0):
            return f"weights that are not the {prior} prior's"
    seed, count, z = info.get("seed", 0), info.get("samples", T), info.get("log_z_dag_modular", 0.0)
    if not (type(seed) is int and 0 <= seed < 2**63 and type(count) is int and count == T
            and isinstance(z, (int, float)) and not isinstance(z, bool) and math.isfinite(z)):
        return f"summary.json's seed {seed!r}, samples {count!r} or log_z_dag_modular {z!r} are not of the {T} samples"
    return None


def _against_orders(orders: np.ndarray, parents: np.ndarray) -> str | None:
    """What is wrong with samples' orders (T, n) and parent sets (T, n) masks or (T, n, W)
    words (`sampling.as_words`): an order that is not a permutation of 0..n − 1, or a
    parent that does not come before its child in the sample's order (a cycle, a loop, a
    bit beyond the variables). None when each DAG lies along its order."""
    T, n = orders.shape
    if T == 0:
        return None
    if not np.array_equal(np.sort(orders, axis=1), np.broadcast_to(np.arange(n), (T, n))):
        return "orders that are not orders of the variables"
    words = parents if parents.ndim == 3 else parents[:, :, None]
    before = np.zeros((T, words.shape[2]), dtype=np.int64)
    rows = np.arange(T)
    for j in range(n):
        v = orders[:, j]
        if np.any(words[rows, v] & ~before):
            return "DAGs with an arc against their order (a cycle)"
        before[rows, v // SK.WORD_BITS] |= np.left_shift(1, v % SK.WORD_BITS)
    return None
