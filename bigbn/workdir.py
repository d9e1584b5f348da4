"""The work directory: zarr v3 tables, the task journal, run.json (DESIGN.md, "The work directory").

    WORKDIR/
      run.json        what was asked (fingerprint), plan, version
      tables.zarr/    zarr v3 group: beta, [alpha], forward, backward, gamma_parts, gamma
      journal.jsonl   one line per finished task, appended and fsynced after its chunks
      edges.csv, summary.json

A task writes its chunk(s), fsyncs the chunk files, and only then appends its journal
line (also fsynced). So a line in the journal means its chunks are durably on disk; a
task without a line is redone from scratch on resume, overwriting whatever partial
chunk it may have left.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import zarr

from .errors import WorkdirError
from .plan import Plan, Region

TABLES = "tables.zarr"
JOURNAL = "journal.jsonl"
RUN_JSON = "run.json"
LOCK = "lock"

_journal_lock = threading.Lock()
_journal_files: dict[tuple[str, str], Path] = {}  # (workdir, token) -> this process's journal file
_array_cache: dict[tuple[str, str], zarr.Array] = {}
_cache_lock = threading.Lock()


def checksum(a: np.ndarray) -> int:
    """CRC-32 of an array's bytes (C order)."""
    return zlib.crc32(np.ascontiguousarray(a).view(np.uint8)) & 0xFFFFFFFF


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Workdir:
    """Paths and table access of one work directory; cheap to create, picklable.

    ``token`` names the run the tables belong to (it changes when --fresh re-creates
    them); it keys the per-process cache of open zarr arrays, so a long-lived cluster
    worker never writes through handles of an earlier run's tables.
    """

    def __init__(self, root: str | os.PathLike, token: str = ""):
        self.root = Path(root)
        self.token = token

    def __reduce__(self):
        return (Workdir, (str(self.root), self.token))

    @property
    def tables(self) -> Path:
        return self.root / TABLES

    @property
    def journal_path(self) -> Path:
        return self.root / JOURNAL

    @property
    def run_json(self) -> Path:
        return self.root / RUN_JSON

    # -- tables ---------------------------------------------------------------------------
    def create_tables(self, plan: Plan) -> None:
        """Create every table array of the plan (existing ones of the same shape are kept)."""
        self.forget_arrays()
        g = zarr.open_group(self.tables, mode="a")
        existing = set(g.array_keys())
        for name, (shape, chunks) in plan.tables().items():
            if name in existing:
                a = g[name]
                if tuple(a.shape) == shape and tuple(a.chunks) == chunks:
                    continue
            g.create_array(name, shape=shape, chunks=chunks, dtype="f8", compressors=None,
                           fill_value=np.nan, overwrite=True)

    def forget_arrays(self) -> None:
        """Drop this process's open array handles of this workdir (tables re-created)."""
        with _cache_lock:
            for key in [k for k in _array_cache if k[0] == str(self.tables)]:
                del _array_cache[key]

    def array(self, name: str) -> zarr.Array:
        key = (str(self.tables), name, self.token)
        with _cache_lock:
            a = _array_cache.get(key)
            if a is None:
                a = zarr.open_array(self.tables / name, mode="r+")
                _array_cache[key] = a
        return a

    def chunk_file(self, name: str, chunk_coords: tuple[int, ...]) -> Path:
        """Path of one chunk's file, as zarr names it (the array's chunk key encoding)."""
        a = self.array(name)
        return Path(a.store_path.store.root) / a.path / a.metadata.encode_chunk_key(tuple(chunk_coords))

    def write(self, name: str, index, data: np.ndarray, chunk_coords: list[tuple[int, ...]]) -> int:
        """Write data at index of table name, fsync the listed chunk files; return CRC-32."""
        self.array(name)[index] = data
        for cc in chunk_coords:
            fsync_path(self.chunk_file(name, cc))
        return checksum(data)

    def region_index(self, region: Region) -> tuple[slice, ...]:
        """The index (one slice per axis) of a region's box of whole chunks."""
        shape = self.array(region.table).chunks
        lo = [min(cc[d] for cc in region.chunks) for d in range(len(shape))]
        hi = [max(cc[d] for cc in region.chunks) + 1 for d in range(len(shape))]
        return tuple(slice(a * s, b * s) for a, b, s in zip(lo, hi, shape))

    def read_region(self, region: Region) -> np.ndarray:
        """A region's values, C-contiguous, shaped as its box."""
        return self.read(region.table, self.region_index(region))

    def write_region(self, region: Region, data: np.ndarray) -> int:
        """Write a region (data of its box's size, any shape), fsync its chunk files;
        return the CRC-32 of the data."""
        index = self.region_index(region)
        box = tuple(sl.stop - sl.start for sl in index)
        return self.write(region.table, index, np.asarray(data).reshape(box), list(region.chunks))

    def read(self, name: str, index) -> np.ndarray:
        return np.ascontiguousarray(self.array(name)[index])

    # -- run.json ---------------------------------------------------------------------------
    def read_run(self) -> dict | None:
        """run.json as a dict, None if absent; WorkdirError if present but unusable."""
        try:
            text = self.run_json.read_text()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise WorkdirError(f"{self.run_json}: cannot read ({e.strerror})") from None
        try:
            run = json.loads(text)
            fp, pl = run["fingerprint"], run["plan"]
            ok = isinstance(fp, dict) and {"data_sha256", "n", "m"} <= fp.keys()
            ok = ok and all(isinstance(pl[k], int) for k in ("n", "k", "chunk_bits"))
            ok = ok and pl["alpha_mode"] in ("recompute", "store")
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            raise WorkdirError(f"{self.run_json} is damaged; use --fresh to start over")
        return run

    def has_state(self) -> bool:
        """Whether tables or journal files exist (work of some run)."""
        return self.tables.exists() or bool(self.journal_files())

    # -- lock ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self):
        """Exclusive lock for one run: flock on WORKDIR/lock, released by the kernel when
        the process dies (so a lock left by a killed run is never stale). The file holds
        the holder's pid, host and start time, for messages and `bigbn status`."""
        path = self.root / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._holder(fd)
                since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
                raise WorkdirError(
                    f"{self.root} is in use by another bigbn run (pid {holder.get('pid')} on "
                    f"{holder.get('host')}, since {since}); wait for it to finish") from None
            me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @staticmethod
    def _holder(fd: int) -> dict:
        try:
            data = json.loads(os.pread(fd, 4096, 0) or b"{}")
            return data if isinstance(data, dict) else {}
        except ValueError:
            return {}

    def active_holder(self) -> dict | None:
        """The holder (pid, host, since) of a run active on this workdir, else None."""
        path = self.root / LOCK
        if not path.exists():
            return None
        fd = os.open(path, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._holder(fd) or {"pid": "?", "host": "?"}
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    # -- journal --------------------------------------------------------------------------
    def _own_journal(self) -> Path:
        """The file this process appends to: journal.jsonl for the process that holds the
        run's lock (or when there is no lock: the engine used directly), otherwise (a
        dask.distributed worker) journal-HOST-PID.jsonl, so that no two processes, maybe on
        different hosts of a shared file system, ever append to the same file."""
        key = (str(self.root), self.token)
        path = _journal_files.get(key)
        if path is None:
            try:
                holder = json.loads((self.root / LOCK).read_text() or "null")
            except (OSError, ValueError):
                holder = None
            me = {"pid": os.getpid(), "host": socket.gethostname()}
            if not isinstance(holder, dict) or {k: holder.get(k) for k in me} == me:
                path = self.journal_path
            else:
                path = self.root / f"journal-{me['host']}-{me['pid']}.jsonl"
            _journal_files[key] = path
        return path

    def journal_files(self) -> list[Path]:
        return sorted(self.root.glob("journal*.jsonl"))

    def journal_append(self, record: dict) -> None:
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        with _journal_lock:
            fd = os.open(self._own_journal(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def journal(self) -> dict[str, dict]:
        """Finished tasks (from every journal file): task id -> its record. A torn line
        (crash or full disk mid-write) is ignored."""
        out: dict[str, dict] = {}
        for path in self.journal_files():
            with open(path, "rb") as fh:
                for raw in fh:
                    try:
                        rec = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and "task" in rec:
                        out[rec["task"]] = rec
        return out

    def repair_journal(self) -> None:
        """End a torn last line in every journal file so that later lines stay whole."""
        for path in self.journal_files():
            with open(path, "rb+") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() == 0:
                    continue
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())

    def clear(self) -> None:
        """Remove tables, journal files and outputs (``--fresh``)."""
        import shutil

        self.forget_arrays()
        _journal_files.pop((str(self.root), self.token), None)
        shutil.rmtree(self.tables, ignore_errors=True)
        for path in self.journal_files():
            path.unlink()
        for name in (RUN_JSON, "edges.csv", "summary.json"):
            (self.root / name).unlink(missing_ok=True)
