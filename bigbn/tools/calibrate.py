"""The plan's clock set to the machine at hand (#39): a short run timed here, kept per user.

`bigbn.plan.lattice.time_estimate` counts a run's elementary operations exactly (per stage:
updates of the truncated transforms, terms of the recursions, bytes written and read,
tasks) and prices them with constants fitted on one reference machine. Hosts of the same
kind differ by 1.7× (n = 28 took 35 s on one 2-core VM and 20.4 s on another), and a
busy machine is a slower one; so a plan priced on the reference machine can be far off.

`measure` times one real run here — the calibration run, `CALIBRATION` (n = 26, k = 3,
binary data, m = 1000, K2, c = 20, as `scripts/bench.py --n 26`), three times: per stage,
the speed factor of this machine is the run's median stage wall over what the reference
clock prices that stage at (`time_estimate` without factors). `time_estimate(plan,
workers, factors)` multiplies each stage's price by its factor, so a plan at any n keeps
the model's exact operation counts and takes this machine's speed. The calibration run is
small (about 20 s in all), so it sees the machine as it is now: calibrate on a machine as
busy as the runs will find it.

The factors are kept in ``$XDG_CACHE_HOME/bigbn/calibration.json`` (else
~/.cache/bigbn/calibration.json; ``BIGBN_CALIBRATION`` names another file), keyed by the
machine (host name, processor, cores) and bigbn's version: a factor measured on another
machine or by another version of the kernels is not used. `bigbn plan --calibrate`
measures; `bigbn plan` uses the factors when they are there and says which clock it used.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from bigbn._version import __version__
from bigbn.errors import OptionError
from bigbn.plan.lattice import Plan, time_estimate


@dataclass(frozen=True)
class Calibration:
    """The run `measure` times: n binary variables, m rows, k parents, chunk bits c."""

    n: int = 26
    k: int = 3
    m: int = 1000
    c: int = 20
    seed: int = 1

    def plan(self) -> Plan:
        return Plan(self.n, self.k, self.c, "recompute", map_dag=False, posterior=True)


CALIBRATION = Calibration()

#: the stages the calibration run times apart; their factor is the run's median stage wall
#: over what `time_estimate` prices the same stage at on the reference clock (the machine
#: its constants were fitted to, where the factors are 1 up to the fit: within 10 % at
#: n = 24–32). Measured against the model, not against a wall once taken on that machine:
#: on this machine on 2026-11-26 wall / model was 0.70, 0.66, 0.62, 0.70 (forward) and
#: 0.83, 0.74, 0.76, 0.76 (backward) at n = 24, 26, 27, 28, where the ratio of the n = 24
#: task-seconds to the reference machine's n = 24 run (0.53, 0.73) under-predicted n = 28
#: by 27 % in the forward stage. n = 26: n = 25's forward stage sits below the model's
#: curve (0.53), n = 24's 16 chunks make its stage walls coarse.
TIMED = ("forward", "backward")
#: stages priced with another stage's factor, those the calibration run does not time
#: apart: the reforward rounds and a stored α are forward tasks' kernels, the MAP stage
#: the same recursion in max-plus; the γ level sums read what the backward tasks wrote
SAME_AS = {"reforward": "forward", "alpha": "forward", "map": "forward", "gamma": "backward"}
#: calibration runs per `measure`; each stage's factor is from their median wall
REPEATS = 3


def cache_file() -> str:
    """Where the factors are kept (see the module's docstring)."""
    if os.environ.get("BIGBN_CALIBRATION"):
        return os.environ["BIGBN_CALIBRATION"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "bigbn", "calibration.json")


def machine() -> dict:
    """What a calibration holds for: this host, its processor and cores, bigbn's version."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(), "bigbn": __version__}


def measure(workers: int | None = None, progress=None) -> dict:
    """Time the calibration run here, `REPEATS` times (each in a temporary folder, removed
    after), and return its record: per stage the factor (the median stage wall over what the
    reference clock prices it at), the median walls, the machine, when, and the load
    average before."""
    from bigbn.api import learn
    from bigbn.tools.simulate import random_network, sample

    cal = CALIBRATION
    rng = np.random.default_rng(cal.seed)
    data = sample(random_network(cal.n, cal.k, 2, rng), cal.m, rng)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    walls, runs = [], []
    for _ in range(REPEATS):
        tmp = tempfile.mkdtemp(prefix="bigbn-calibrate-")
        try:
            t0 = time.time()
            res = learn(data, names=[f"X{i + 1}" for i in range(cal.n)], score="k2", max_parents=cal.k,
                        workdir=tmp, chunk_bits=cal.c, workers=workers, progress=progress,
                        parent_set_mass=1e-9)
            walls.append(time.time() - t0)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        runs.append({s: v["wall_seconds"] for s, v in res.summary["stages"].items()})
    stages = {s: float(np.median([r[s] for r in runs])) for s in runs[0] if all(s in r for r in runs)}
    wall = float(np.median(walls))
    missing = sorted(set(TIMED) - set(stages))
    if missing:
        raise OptionError(f"the calibration run has no {', '.join(missing)} stage")
    used = res.summary["plan"]["workers"]
    model = time_estimate(cal.plan(), used)
    return {"machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M", time.localtime()),
            "workers": used, "load_before": load, "wall_seconds": round(wall, 2),
            "stage_seconds": stages, "model_seconds": {s: round(model[s], 4) for s in TIMED},
            "factors": {s: round(stages[s] / model[s], 3) for s in TIMED}}


def save(record: dict, path: str | None = None) -> str:
    """Write ``record`` (from `measure`) to the cache file; returns its path. A file that
    cannot be written there (a folder in its place, a parent that is a file, no
    permission) is an OptionError naming it (`check_writable`); no temporary file is left
    behind."""
    path = path or cache_file()
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        _make_room(path)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
        os.replace(tmp, path)
    except OSError as e:
        _remove(tmp)
        raise _unwritable(path, e) from None
    return path


def check_writable(path: str | None = None) -> None:
    """OptionError (as `save` says it) unless the cache file can be written: checked
    before the calibration runs, which take a minute, so that a folder or a file in the
    way is said at once (it was a traceback once the timing was done, its record lost).
    The file itself is left as it is."""
    path = path or cache_file()
    probe = f"{path}.tmp{os.getpid()}"
    try:
        _make_room(path)
        with open(probe, "w", encoding="utf-8"):
            pass
    except OSError as e:
        raise _unwritable(path, e) from None
    finally:
        _remove(probe)


def _make_room(path: str) -> None:
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.exists(parent) and not os.path.isdir(parent):  # makedirs said "File exists"
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)


def _remove(tmp: str) -> None:
    try:
        if os.path.lexists(tmp) and not os.path.isdir(tmp):
            os.unlink(tmp)
    except OSError:
        pass


def _unwritable(path: str, e: OSError) -> OptionError:
    return OptionError(f"cannot keep the calibration in {path}: {e.strerror or e} "
                       "(set BIGBN_CALIBRATION to a file that can be written)")


def load(path: str | None = None) -> dict | None:
    """The kept record if there is one for this machine and version, else None (no file,
    another machine or version, or a file that is not a calibration: ignored, not an
    error — the plan then uses the reference machine's clock). Every field a plan reads is
    checked here: a record without "when" (which `clock` names) was a KeyError traceback in
    every later `bigbn plan` and `bigbn report`, and a file nested too deep for json a
    RecursionError one."""
    path = path or cache_file()
    try:
        text = _read_small(path)
        rec = json.loads(text) if text is not None else None
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(rec, dict) or rec.get("machine") != machine() or not isinstance(rec.get("when"), str):
        return None
    f = rec.get("factors")
    if not isinstance(f, dict) or set(f) != set(TIMED) or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1e6 for v in f.values()):
        return None
    return rec


#: The most bytes a calibration file may hold (a record is under 1 KiB): a larger one is
#: no calibration, and is not read whole.
MAX_BYTES = 1 << 20


def _read_small(path: str) -> str | None:
    """The text of ``path`` if it is a regular file of at most `MAX_BYTES`, else None.
    Opened as the workdir's files are (`bigbn.store.workdir.open_file`: without blocking,
    typed on its descriptor; anything but a regular file is a WorkdirError, a ValueError,
    which `load` takes for no calibration): BIGBN_CALIBRATION naming a FIFO made every
    `bigbn plan` and `bigbn report` wait forever for a writer, and /dev/zero read until
    memory ran out."""
    from bigbn.store.workdir import open_file

    with open_file(path, "rb") as f:
        if os.fstat(f.fileno()).st_size > MAX_BYTES:
            return None
        data = f.read(MAX_BYTES + 1)
    return None if len(data) > MAX_BYTES else data.decode("utf-8")


def stage_factors(record: dict | None) -> dict[str, float] | None:
    """Per stage of `time_estimate`, the factor of ``record`` (None: the reference clock)."""
    if record is None:
        return None
    f = dict(record["factors"])
    f.update({s: f[other] for s, other in SAME_AS.items()})
    f["start"] = 1.0  # imports and loading the kernels: not what the calibration run times
    return f


def clock(record: dict | None, hint: str = "") -> str:
    """How a plan names the clock its times are on: this machine's, calibrated when, or the
    reference machine's (then followed by ``hint``)."""
    return f"this machine (calibrated {record['when']})" if record is not None else "the reference machine" + hint


def estimate(plan: Plan, workers: int, record: dict | None) -> dict[str, float]:
    """`time_estimate` on this machine's clock (``record``) or the reference one (None)."""
    return time_estimate(plan, workers, stage_factors(record))
