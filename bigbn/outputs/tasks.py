"""Planned, journaled tasks for what is computed from a finished run (samples, effects).

`bigbn sample` and `bigbn effects` split their work into tasks (a batch of samples, the
pairs of one cause) that run through the engine's executors (bigbn/engine/executors/: sync,
threads, distributed) and resume after a kill as a run does (docs/design.md, "Work directory
and resume"): each task writes its part, an .npz file, to a temporary name, fsyncs it,
renames it into ``FOLDER/parts/`` and fsyncs the folder, then appends its journal line
(`workdir.Journal`, with the CRC-32C of the arrays it wrote) to ``FOLDER/journal.jsonl``
(a dask worker to ``journal-HOST-PID.jsonl``). On start, every journaled part is read
and checked against its CRC; a part that is missing, damaged or half-written runs again.
Tasks are deterministic, so a resumed result is bit-identical to an unbroken one.

A task is a `PartSpec` (kind, name, the numbers it needs; no dependencies) and a picklable
``compute(spec) -> (arrays, extras)``; `PartTask` adds the write and the journal line.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bigbn.errors import WorkdirError
from bigbn.engine.executors import Callback
from bigbn.engine.executors.dispatch import run as run_specs
from bigbn.store.workdir import (JOURNAL_GLOB, Journal, _kind, checksum, fsync_path, not_a_file, read_file,
                                  write_whole)

PARTS = "parts"


@dataclass(frozen=True)
class PartSpec:
    """One task: ``kind`` ("batch", "cause"), ``name`` (unique within the kind) and
    ``args`` (the numbers its compute function reads). What the executors need of a spec:
    key, id, kind, deps, scope (one folder of parts is one scope: "")."""

    kind: str
    name: str
    args: tuple = ()
    deps: tuple = ()
    scope: str = ""

    @property
    def key(self) -> tuple:
        return (self.kind, self.name)

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"


def part_path(folder: Path, spec: PartSpec) -> Path:
    return Path(folder) / PARTS / f"{spec.kind}-{spec.name}.npz"


def arrays_crc(arrays: dict) -> int:
    """CRC-32C chained over the arrays in name order (their bytes, dtype and shape)."""
    crc = 0
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        crc = checksum(np.frombuffer(f"{name}:{a.dtype.str}:{a.shape}".encode(), dtype=np.uint8), crc)
        crc = checksum(a, crc)
    return crc


def write_part(folder: Path, spec: PartSpec, arrays: dict) -> int:
    """Write ``arrays`` as the part of ``spec`` durably (temporary file, fsync, rename,
    fsync of the folder); returns their CRC."""
    path = part_path(folder, spec)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.replace(tmp, path)
    except IsADirectoryError:
        tmp.unlink(missing_ok=True)
        raise WorkdirError(f"{path} is a folder where the part of task {spec.id} belongs; remove it, then run "
                           "the same command again") from None
    fsync_path(path.parent)
    return arrays_crc(arrays)


def read_part(folder: Path, spec: PartSpec, rec: dict | None = None) -> dict | None:
    """The arrays of a part, or None when the part is missing, unreadable or (given its
    journal record) not the CRC it was written with, or not a file (a FIFO would block the
    read; `write_part` replaces it)."""
    if not part_path(folder, spec).is_file():
        return None
    try:
        with np.load(part_path(folder, spec), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception:  # noqa: BLE001 - missing, truncated or damaged: simply "bad"
        return None
    if rec is not None and arrays_crc(arrays) != rec.get("crc"):
        return None
    return arrays


@dataclass(frozen=True)
class PartTask:
    """The task function the executors run: compute, write the part, journal it.

    folder: the task folder; owner: (host, pid) of the process holding the run's lock
    (its journal is journal.jsonl, any other process's journal-HOST-PID.jsonl);
    compute(spec) -> (dict of arrays, dict of JSON numbers for the journal record).
    Picklable when compute is (a cluster worker gets it once)."""

    folder: str
    owner: tuple | None
    compute: Callable

    def __call__(self, spec: PartSpec) -> dict:
        start, t0 = time.time(), time.perf_counter()
        arrays, extras = self.compute(spec)
        crc = write_part(Path(self.folder), spec, arrays)
        rec = dict(extras, task=spec.id, stage=spec.kind, crc=crc,
                   seconds=round(time.perf_counter() - t0, 4), start=start, end=time.time(),
                   pid=os.getpid())
        Journal(Path(self.folder), self.owner).append(rec)
        return rec


class _Progress(Callback):
    def __init__(self, progress, stage: str, total: int, done: int):
        self.progress, self.stage, self.total, self.done = progress, stage, total, done

    def on_task_end(self, event) -> None:
        self.done += 1
        self.progress(self.stage, self.done, self.total)


def _own_copy(path: Path) -> None:
    """Replace a journal file that is a link (symbolic, or hard: a workdir cloned by
    ``cp -rs`` or ``cp -rl``) by a file of its own with the same lines, so that the records
    this folder's tasks append (and `Journal.repair`) never reach the file it shares: a
    sampler in such a clone appended its batches to the original workdir's journal."""
    st = os.lstat(path)
    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
        return
    data = read_file(path)
    write_whole(path, lambda tmp: tmp.write_bytes(data), path.with_name(f".{path.name}.{os.getpid()}.tmp"))


def run_parts(folder, specs: Sequence[PartSpec], compute: Callable, *, owner=None,
              scheduler="threads", workers: int | None = None, progress=None,
              stage: str = "") -> tuple[dict[str, dict], dict[str, dict]]:
    """Run every task of ``specs`` whose part is not already journaled and intact.

    Returns (spec id -> journal record, spec id -> the part's arrays), for every spec.
    The caller holds the run's lock, so no task of this folder is running: temporary
    files that a killed writer left are removed first.
    progress(stage, tasks done, tasks) after each task (and once for those already done)."""
    folder = Path(folder)
    try:
        (folder / PARTS).mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as e:  # a file where the folder or its parts/ belongs
        # the first of the two that is not a folder (a file in place of effects-KEY/ itself was
        # called its parts/, which is not there)
        where = next((p for p in (folder, folder / PARTS) if os.path.lexists(p) and not p.is_dir()),
                     e.filename)
        raise WorkdirError(f"{where} is a file where a folder of the tasks' parts belongs; remove it, "
                           "then run the same command again") from None
    for tmp in (folder / PARTS).glob(".*.tmp"):  # a writer killed before its rename
        tmp.unlink(missing_ok=True)
    for path in sorted(folder.glob(JOURNAL_GLOB)):  # the run's message said "--fresh", which
        try:                                        # `bigbn sample` and `bigbn effects` do not have
            kind = None if stat.S_ISREG(mode := os.stat(path).st_mode) else _kind(mode)
        except OSError:
            kind = "a broken link"
        if kind is not None:
            raise not_a_file(path, kind, "remove it, then run the same command again")
        _own_copy(path)
    journal = Journal(folder, owner)
    journal.repair()
    recs = journal.records()
    # compute.valid(spec, arrays), when it has one: whether a part holds the arrays its task
    # writes (names, shapes); a part and its journal line copied from another task folder
    # passed the CRC and were broadcast into the wrong number of pairs
    valid = getattr(compute, "valid", None) or (lambda spec, arrays: True)
    parts: dict[str, dict] = {}
    for s in specs:
        if s.id in recs:
            arrays = read_part(folder, s, recs[s.id])
            if arrays is not None and valid(s, arrays):
                parts[s.id] = arrays
    pending = [s for s in specs if s.id not in parts]
    callbacks = []
    if progress is not None:
        callbacks.append(_Progress(progress, stage, len(specs), len(specs) - len(pending)))
        progress(stage, len(specs) - len(pending), len(specs))
    if pending:
        run_specs(pending, PartTask(str(folder), owner, compute), scheduler=scheduler, workers=workers,
                 callbacks=callbacks, visible=folder, where="folder")
        recs = journal.records()
    out: dict[str, dict] = {}
    for s in specs:
        rec = recs.get(s.id)
        arrays = parts.get(s.id)
        if arrays is None and rec is not None:
            arrays = read_part(folder, s, rec)
        if arrays is None or not valid(s, arrays):  # written a moment ago: only a concurrent writer could do this
            raise WorkdirError(f"{part_path(folder, s)}: missing or damaged right after its task ran; "
                               "run the same command again")
        out[s.id] = arrays
    return {s.id: recs[s.id] for s in specs}, out


def threads_per_task(scheduler, workers: int, tasks: int) -> int:
    """Threads a task may use inside itself: the cores left to it by the tasks running
    beside it under a local executor (threads, dask, sync); 1 on a cluster (a worker's own
    threads)."""
    if scheduler == "sync":
        return max(1, workers)
    if scheduler in ("threads", "dask"):
        return max(1, workers // max(1, min(workers, tasks)))
    return 1
