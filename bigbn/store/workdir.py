"""The work directory: zarr v3 tables, the task journal, run.json (docs/design.md, "The work directory").

    WORKDIR/
      run.json        what was asked (fingerprint), plan, version
      tables.zarr/    zarr v3 group: beta, [alpha], forward, backward, gamma_parts, gamma_levels, gamma
      journal.jsonl   one line per finished task, appended and fsynced after its chunks
      edges.csv, parent_sets.csv, summary.json
      samples-PRIOR/  what `bigbn sample` wrote

A task writes its chunk(s), fsyncs the chunk files, and only then appends its journal
line (also fsynced). So a line in the journal means its chunks are durably on disk; a
task without a line is redone from scratch on resume, overwriting whatever partial
chunk it may have left.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import shutil
import socket
import stat
import sys
import threading
import time
from pathlib import Path

from dataclasses import dataclass
from typing import TYPE_CHECKING

import google_crc32c
import numpy as np

from bigbn.errors import WorkdirError
from bigbn.plan.lattice import Plan, Region

if TYPE_CHECKING:
    import zarr

TABLES = "tables.zarr"
JOURNAL = "journal.jsonl"
RUN_JSON = "run.json"
LOCK = "lock"
JOURNAL_GLOB = "journal*.jsonl"
SAMPLES_GLOB = "samples-*"
EFFECTS_GLOB = "effects-*"  # the journaled parts of `bigbn effects` (bigbn/outputs/tasks.py)
# What a run, `bigbn sample`, `bigbn effects` and `bigbn export` write next to run.json (``--fresh``
# removes exactly these: one left behind by a --fresh run refused before its run.json
# made the folder look like somebody else's).
OUTPUTS = ("edges.csv", "summary.json", "parent_sets.csv", "map_dag.csv", "effects.csv", "strength.csv",
           "network.bif", "network.xml")


def checksum(a: np.ndarray, start: int = 0) -> int:
    """CRC-32C (Castagnoli) of an array's bytes (C order), continuing from ``start`` (to
    chain arrays). google-crc32c (a dependency of zarr's too) computes it with the CPU's
    CRC instruction: 0.45 ms an 8 MiB chunk on the reference VM, against 3.9 ms for
    zlib's CRC-32, which was 2 % of a run's CPU."""
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)  # a view: a stays writable
    raw.flags.writeable = False  # google-crc32c takes read-only buffers only
    return google_crc32c.extend(start, raw)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Layout:
    """What a table's chunk files hold, read from its ``zarr.json`` when that has the plain
    form every table of a plan is made with (`TableStore.create`): a zarr v3 array on a
    regular chunk grid, the default chunk key encoding, the bytes codec alone in this
    machine's byte order (no compressor, filter or storage transformer). A chunk file is
    then the chunk's values in C order, and the file of chunk (i, j) is ``c/i/j``."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    fill: float | int  # the fill value: a chunk never written reads as it
    separator: str

    def key(self, chunk_coords: tuple[int, ...]) -> str:
        return self.separator.join(("c",) + tuple(str(int(c)) for c in chunk_coords))


def plain_layout(meta: Path) -> Layout | None:
    """The `Layout` of the table whose metadata is ``meta`` (a ``zarr.json``); None when the
    file is missing or unreadable, or describes anything else (zarr then reads it). Strict:
    only the keys and values zarr writes for such an array (no extension, unknown key or
    configuration, fill value the type cannot hold), so that a layout is never found for
    metadata zarr itself would refuse or read otherwise. WorkdirError when ``meta`` is not a
    regular file (a FIFO, a folder: `open_fd`), which zarr would wait on or fail to read."""
    try:
        m = json.loads(read_file(meta, _in_the_way_error))
        if not (isinstance(m, dict) and set(m) <= _ARRAY_KEYS and m.get("zarr_format") == 3
                and m.get("node_type") == "array" and m.get("storage_transformers", []) == []
                and isinstance(m.get("attributes", {}), dict)):
            return None
        grid, keys, codecs, name = m["chunk_grid"], m["chunk_key_encoding"], m["codecs"], m["data_type"]
        shape, chunks = m["shape"], grid["configuration"]["chunk_shape"]
        if not (set(grid) == {"name", "configuration"} and grid["name"] == "regular"
                and set(grid["configuration"]) == {"chunk_shape"}
                and set(keys) <= {"name", "configuration"} and keys["name"] == "default"
                and set(keys.get("configuration", {})) <= {"separator"}
                and isinstance(codecs, list) and len(codecs) == 1 and set(codecs[0]) <= {"name", "configuration"}
                and codecs[0]["name"] == "bytes" and set(codecs[0].get("configuration", {})) <= {"endian"}
                and name in _PLAIN_TYPES and isinstance(shape, list) and isinstance(chunks, list)
                and len(shape) == len(chunks) > 0
                and all(type(x) is int and x >= 0 for x in shape) and all(type(c) is int and c > 0 for c in chunks)):
            return None
        separator = keys.get("configuration", {}).get("separator", "/")
        endian = codecs[0].get("configuration", {}).get("endian")
        names = m.get("dimension_names")
        fill = m["fill_value"]
    except WorkdirError:
        raise  # a FIFO or a folder of its name: zarr would wait on it, or fail
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    dtype = np.dtype(name)
    if separator not in ("/", ".") or endian not in (None, "little", "big") \
            or (dtype.itemsize > 1 and endian != sys.byteorder):
        return None
    if names is not None and not (isinstance(names, list) and len(names) == len(shape)
                                  and all(x is None or isinstance(x, str) for x in names)):
        return None
    if dtype.kind == "f":
        fill = _FILLS.get(fill, fill) if isinstance(fill, str) else fill
        if not isinstance(fill, (int, float)) or isinstance(fill, bool):
            return None
        try:
            fill = float(fill)
        except OverflowError:  # an integer past float64's range: zarr refuses it too
            return None
    elif not (type(fill) is int and np.iinfo(dtype).min <= fill <= np.iinfo(dtype).max):
        return None
    return Layout(tuple(shape), tuple(chunks), dtype, fill, separator)


def planned(plan: Plan, name: str) -> tuple[tuple[int, ...], tuple[int, ...], np.dtype]:
    """Table ``name``'s shape, chunk shape and type as ``plan`` gives them (float64 unless
    the plan names a type)."""
    shape, chunks, *dtype = plan.tables()[name]
    return tuple(shape), tuple(chunks), np.dtype(dtype[0] if dtype else "f8")


_PLAIN_TYPES = ("float64", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FILLS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_ARRAY_KEYS = {"shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs", "attributes",
               "zarr_format", "node_type", "storage_transformers", "dimension_names"}


class TableStore:
    """The zarr v3 tables of one run (``WORKDIR/tables.zarr``): region I/O with fsync.

    A box of whole chunks of a table of the plain form (`Layout`, every table a plan
    makes) is read, and a single whole chunk written, by plain file I/O on the chunk
    files zarr reads and writes: several times faster than zarr's pipeline (its event
    loop, buffer copies, a temporary file per chunk), and a process that only reads a
    finished run (`bigbn sample`, `report`, `open`) never imports zarr (≈ 0.15 s).
    Anything else goes through zarr. Layouts and open array handles are cached in the
    instance (its lifetime is a run: a cluster worker gets its own copy with the task
    function, never an earlier run's).
    """

    def __init__(self, path: Path):
        self.path = path
        self._arrays: dict[str, zarr.Array] = {}
        self._layouts: dict[str, Layout | None] = {}
        self._lock = threading.Lock()

    def create(self, plan: Plan) -> None:
        """Create every table array of the plan. Existing ones of the same shape are kept;
        one whose metadata (zarr.json) is damaged or of another shape is made anew (its
        tasks' chunks then fail their CRC and are recomputed). A file in the place of the
        tables' folder is a WorkdirError (`clear`, i.e. --fresh, removes it)."""
        import zarr

        self.forget()
        self.check_folder()
        with _in_the_way():
            try:
                g = zarr.open_group(self.path, mode="a")
            except Exception:  # noqa: BLE001 - damaged group metadata: write it again
                (self.path / "zarr.json").unlink(missing_ok=True)
                g = zarr.open_group(self.path, mode="a")
            for name in plan.tables():
                shape, chunks, dtype = planned(plan, name)
                meta = self.path / name / "zarr.json"
                if meta.exists():
                    if self.matches(plan, name):
                        continue
                    meta.unlink()
                g.create_array(name, shape=shape, chunks=chunks, dtype=dtype, compressors=None,
                               fill_value=np.nan if dtype.kind == "f" else -1, overwrite=True)

    def check_folder(self, then: str = "run the same command with --fresh to start over") -> None:
        """WorkdirError when the tables' path exists but is not a folder."""
        if os.path.lexists(self.path) and not self.path.is_dir():
            raise WorkdirError(f"{self.path} is a file, not the folder of the run's tables; {then}")

    def put(self, name: str, data: np.ndarray) -> None:
        """Store a whole array that no plan describes as table ``name`` (made anew, one
        chunk per row), fsync its chunk files."""
        import zarr

        with self._lock:
            self._arrays.pop(name, None)
            self._layouts.pop(name, None)
        g = zarr.open_group(self.path, mode="a")
        g.create_array(name, shape=data.shape, chunks=(1,) + data.shape[1:], dtype=data.dtype,
                       compressors=None, fill_value=np.nan, overwrite=True)
        self.write(name, slice(None), data, [(i,) + (0,) * (data.ndim - 1) for i in range(data.shape[0])])

    def readable(self, plan: Plan, name: str) -> bool:
        """Whether table ``name`` can be read as the shape, chunks and type ``plan`` gives
        it (False for missing or damaged metadata), by its `Layout` where it has the plain
        form, else as zarr opens it: what a reader of a finished run asks (its values are
        checked against the journal's CRCs). Read afresh, not from the cache."""
        lay = plain_layout(self.path / name / "zarr.json")
        if lay is None:
            return self.matches(plan, name)
        return (lay.shape, lay.chunks, lay.dtype) == planned(plan, name)

    def matches(self, plan: Plan, name: str) -> bool:
        """Whether table ``name`` exists with the shape, chunks and type ``plan`` gives it,
        as zarr opens it (False for missing metadata, or metadata zarr refuses: `create`
        makes such a table anew, so a run that asks whether its tables are finished asks
        this, the same rule)."""
        import zarr

        try:
            os.close(open_fd(self.path / name / "zarr.json"))  # a FIFO there: zarr's read would wait
            a = zarr.open_array(self.path / name, mode="r")
            return (tuple(a.shape), tuple(a.chunks), a.dtype) == planned(plan, name)
        except Exception:  # noqa: BLE001 - zarr raises many kinds on damaged metadata
            return False

    def forget(self) -> None:
        """Drop the open array handles and layouts (the tables were re-created or removed)."""
        with self._lock:
            self._arrays.clear()
            self._layouts.clear()

    def array(self, name: str) -> zarr.Array:
        import zarr

        with self._lock:
            a = self._arrays.get(name)
            if a is None:
                a = self._arrays[name] = zarr.open_array(self.path / name, mode="r+")
        return a

    def layout(self, name: str) -> Layout | None:
        """Table ``name``'s `Layout`, None when it is not of the plain form (or its
        metadata is missing: not cached, the table may be made next)."""
        with self._lock:
            if name in self._layouts:
                return self._layouts[name]
        lay = plain_layout(self.path / name / "zarr.json")
        if lay is not None or (self.path / name / "zarr.json").exists():
            with self._lock:
                self._layouts[name] = lay
        return lay

    def chunk_file(self, name: str, chunk_coords: tuple[int, ...]) -> Path:
        """Path of one chunk's file, as zarr names it (the array's chunk key encoding)."""
        lay = self.layout(name)
        if lay is not None:
            return self.path / name / lay.key(chunk_coords)
        a = self.array(name)
        return Path(a.store_path.store.root) / a.path / a.metadata.encode_chunk_key(tuple(chunk_coords))

    def _box(self, name: str, index) -> tuple[Layout, list[tuple[int, int]], tuple[int, ...]] | None:
        """If ``index`` (a slice or an integer, or one per axis) is a box of whole chunks of
        a table of the plain form: its layout, per axis the range of chunk coordinates,
        and the axes an integer takes away (of chunk size 1, as α's rows); else None (zarr
        reads or writes it)."""
        lay = self.layout(name)
        if lay is None:
            return None
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > len(lay.shape):
            return None
        index = index + (slice(None),) * (len(lay.shape) - len(index))
        ranges, drop = [], []
        for axis, (sl, dim, size) in enumerate(zip(index, lay.shape, lay.chunks)):
            if isinstance(sl, (int, np.integer)) and not isinstance(sl, bool):
                if size != 1 or not 0 <= sl < dim:
                    return None
                ranges.append((int(sl), int(sl) + 1))
                drop.append(axis)
                continue
            if not isinstance(sl, slice) or sl.step not in (None, 1) or dim % size:
                return None
            start = 0 if sl.start is None else sl.start
            stop = dim if sl.stop is None else sl.stop
            if not (isinstance(start, (int, np.integer)) and isinstance(stop, (int, np.integer))) \
                    or isinstance(start, bool) or isinstance(stop, bool) \
                    or start < 0 or start % size or stop % size or not start < stop <= dim:
                return None
            ranges.append((int(start) // size, int(stop) // size))
        return lay, ranges, tuple(drop)

    def read(self, name: str, index, evict: bool = False) -> np.ndarray:
        """The values at index of table name. evict: the run reads this chunk no more
        (a backward task's L); a whole chunk's pages are then dropped from the page cache
        after the read, so that the chunks written next reuse them (see `_evict`)."""
        box = self._box(name, index)
        if box is None:
            return np.ascontiguousarray(self.array(name)[index])
        lay, ranges, drop = box
        shape = tuple((hi - lo) * size for (lo, hi), size in zip(ranges, lay.chunks))
        out = np.empty(shape, dtype=lay.dtype)
        if all(hi - lo == 1 for lo, hi in ranges):  # one chunk: read straight into out
            self._read_chunk(name, lay, tuple(lo for lo, _ in ranges), out, evict)
        else:
            part = np.empty(lay.chunks, dtype=lay.dtype)
            for cc in np.ndindex(*(hi - lo for lo, hi in ranges)):
                self._read_chunk(name, lay, tuple(lo + c for c, (lo, _) in zip(cc, ranges)), part, evict)
                out[tuple(slice(c * size, (c + 1) * size) for c, size in zip(cc, lay.chunks))] = part
        return out.reshape([x for axis, x in enumerate(shape) if axis not in drop]) if drop else out

    def _read_chunk(self, name: str, lay: Layout, chunk_coords: tuple[int, ...], out: np.ndarray,
                    evict: bool) -> None:
        """Chunk ``chunk_coords`` into ``out`` (C-contiguous, the chunk's shape); a chunk
        never written reads as the fill value, as zarr reads it."""
        path = self.path / name / lay.key(chunk_coords)
        try:
            # a FIFO (or a folder, a socket) in its place is refused, never waited on
            with open_file(path, "rb", lambda p, _: _in_the_way_error(p, "not a regular file")) as f:
                got = f.readinto(memoryview(out).cast("B"))
                extra = f.read(1)
                if evict:
                    _evict(f.fileno())
        except FileNotFoundError:
            out[...] = lay.fill
            return
        if got != out.nbytes or extra:
            raise WorkdirError(f"{path}: chunk file of {'more than ' if extra else ''}{got} bytes, "
                               f"expected {out.nbytes} (damaged; a run recomputes it)")

    def write(self, name: str, index, data: np.ndarray, chunk_coords: list[tuple[int, ...]]) -> None:
        """Write data at index of table name, fsync the listed chunk files (the caller keeps
        the CRC it journals: engine._write_all).

        A single whole chunk (L, B, a γ part) is written in place by plain file I/O: a
        write killed half way leaves a chunk whose CRC fails, and its task runs again (a
        task's journal line follows the fsync of its chunks); never through a symlink or
        hard link in the chunk file's place (`_open_own`)."""
        with _in_the_way():
            box = self._box(name, index)
            if box is None or not all(hi - lo == 1 for lo, hi in box[1]):
                self.array(name)[index] = data
            else:
                lay, ranges, _ = box
                path = self.path / name / lay.key(tuple(lo for lo, _ in ranges))
                buf = memoryview(np.ascontiguousarray(data, dtype=lay.dtype).reshape(lay.chunks)).cast("B")
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = _open_own(path)
                try:
                    done = 0
                    while done < len(buf):
                        done += os.write(fd, buf[done:])
                    os.ftruncate(fd, len(buf))
                finally:
                    os.close(fd)
            for cc in chunk_coords:
                fsync_path(self.chunk_file(name, cc))

    def region_index(self, region: Region) -> tuple[slice, ...]:
        """The index (one slice per axis) of a region's box of whole chunks."""
        lay = self.layout(region.table)
        shape = lay.chunks if lay is not None else self.array(region.table).chunks
        lo = [min(cc[d] for cc in region.chunks) for d in range(len(shape))]
        hi = [max(cc[d] for cc in region.chunks) + 1 for d in range(len(shape))]
        return tuple(slice(a * s, b * s) for a, b, s in zip(lo, hi, shape))

    def delete_region(self, region: Region) -> None:
        """Remove a region's chunk files (a missing one is fine: deleting is idempotent),
        and the folders of their chunk keys that this leaves empty (a γ part's key,
        c/H/0/0, made two: c/H and c/H/0, each a block, left behind by every release:
        2·2^h blocks by the end of a run, most of its disk with tiny chunks); then fsync
        the folders that stay, so that the space is free before the journal says so."""
        folders = set()
        lay = self.layout(region.table)
        for cc in region.chunks:
            f = self.chunk_file(region.table, cc)
            with _in_the_way():
                f.unlink(missing_ok=True)
            d = f.parent
            # the folders of the key below the table's c/ (none for a key of one coordinate)
            for _ in range(len(cc) - 1 if lay is not None and lay.separator == "/" else 0):
                try:
                    d.rmdir()
                except OSError:  # another chunk's files in it, or gone already
                    break
                d = d.parent
            folders.add(d)
        for d in folders:
            if d.is_dir():
                fsync_path(d)

    def clear(self) -> None:
        import shutil

        self.forget()
        if os.path.lexists(self.path) and not self.path.is_dir():
            self.path.unlink()  # a file where the tables' folder belongs
        shutil.rmtree(self.path, ignore_errors=True)


@contextlib.contextmanager
def _in_the_way():
    """A folder where a file of the tables belongs, or a file where a folder does (the OS
    error of making, writing or removing it), as a WorkdirError that says how to go on."""
    try:
        yield
    except (IsADirectoryError, NotADirectoryError, FileExistsError) as e:
        raise _in_the_way_error(e.filename, e.strerror) from None


def _in_the_way_error(path, why: str) -> WorkdirError:
    return WorkdirError(f"{path} is in the way of the run's tables ({why}); run the same command with "
                        "--fresh to start over")


#: what a path that is not a regular file is, by its type (`open_fd`'s messages)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def not_a_file(path, kind: str, then: str = "remove it, then run the command that wrote it again") -> WorkdirError:
    """The error of a workdir file that is ``kind`` ("a FIFO", "a folder", ...), not a file."""
    return WorkdirError(f"{path} is {kind}, not a file as bigbn writes it; {then}")


def open_fd(path, flags: int = os.O_RDONLY, refuse=not_a_file) -> int:
    """``os.open(path, flags, 0o644)`` for a file of a work directory (run.json,
    summary.json, edges.csv, samples.npz, the lock, ...), which must be a regular file:
    anything else in its place is ``refuse(path, kind)`` (by default a WorkdirError naming
    the file and saying what to do). A FIFO put where such a file belongs made every
    reader wait forever for a writer, and a folder or a socket was an OSError out of some
    readers and "no such file" to others: so the file is opened with O_NONBLOCK (a FIFO
    with no writer opens at once; no effect on a regular file's reads and writes) and its
    type checked on the descriptor it was opened as, not on the name beforehand. A
    missing file is the caller's FileNotFoundError, as from ``os.open``. Only for the
    workdir's own files: the data a user gives may be a pipe (bigbn/io/data.py)."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o644)
    except OSError as e:
        if not (isinstance(e, IsADirectoryError) or e.errno == errno.ENXIO):  # ENXIO: a socket
            raise
        try:
            kind = _kind(os.stat(path).st_mode)
        except OSError:
            kind = "not a regular file"
        raise refuse(path, kind) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise refuse(path, _kind(mode))
    return fd


def open_file(path, mode: str = "rb", refuse=not_a_file, **kw):
    """``open(path, mode, **kw)`` for reading a file of a work directory, opened by `open_fd`."""
    return open(path, mode, opener=lambda _, flags: open_fd(path, flags, refuse), **kw)


def read_file(path, refuse=not_a_file) -> bytes:
    """The bytes of a workdir file (`open_fd`): ``Path.read_bytes``, never waiting on a FIFO."""
    with open_file(path, "rb", refuse) as fh:
        return fh.read()


def write_whole(path: Path, write, tmp: Path | None = None) -> None:
    """``write(tmp)``, then the temporary file renamed to ``path`` (``tmp``: by default
    ``path``'s name + ".tmp", which `Workdir.clear` removes): a command killed while it
    wrote left the file cut short, which `bigbn status` called finished and `bigbn report`
    read; and a symlink or a hard link in ``path``'s place (a workdir cloned by ``cp -s``
    or ``cp -l``) had the file it points to, outside the workdir, overwritten. Now ``path``
    is the old file or the new one, whole, and a link in its place is replaced. Whatever
    holds ``tmp``'s name is removed first (a FIFO there was written through, then renamed
    into place)."""
    tmp = tmp or path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    write(tmp)
    os.replace(tmp, path)


def check_outputs(root: Path, names=OUTPUTS) -> None:
    """WorkdirError (`not_a_file`) when a file a command writes into the workdir (``names``
    in folder ``root``; by default what a run writes next to run.json, `OUTPUTS`) has
    something else in its place: a FIFO made the command wait forever, once its work was
    done, for a reader of edges.csv; a folder was an OSError. Checked before the work where
    the command can, so that it says so at once (its journal keeps what it computes)."""
    for name in names:
        try:
            mode = os.stat(root / name).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        if not stat.S_ISREG(mode):
            raise not_a_file(root / name, _kind(mode), "remove it, then run the same command again")


def _open_own(path: Path) -> int:
    """A file descriptor to write chunk file ``path`` in place, a file of the run's own:
    a symlink or a hard link in its place (a workdir cloned by ``cp -s`` or ``cp -l``) is
    replaced by a new file, never written through (zarr's writes, a new file renamed into
    place, never write through one either)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as e:
        if e.errno == errno.ENXIO:  # a FIFO no process reads
            raise _in_the_way_error(path, "not a regular file") from None
        if e.errno != errno.ELOOP:  # ELOOP: path is a symlink
            raise
    else:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise _in_the_way_error(path, "not a regular file")
        if st.st_nlink <= 1:
            return fd
        os.close(fd)
    path.unlink()
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)


def _evict(fd: int) -> None:
    """Drop a fully written, fsynced file's pages from the page cache (they are clean, so
    nothing is lost; a later read goes to the disk). A run's tables grow the page cache by
    their whole size, and on a virtual machine a page the guest has not used lately is
    costly to get (a new 8 MiB chunk file costs ≈ 35 ms of system time on the reference
    VM against ≈ 4 ms when it reuses pages just freed: docs/design.md). Where
    posix_fadvise is missing (macOS) or refused (a filesystem without it) this does
    nothing: it is advice, the values read are the same either way."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        try:
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# Fields a stage's record carries besides task, stage, crc, seconds, start, end: numbers,
# and counts (integers ≥ 0). "batch": a batch of samples (`samples.BatchTask`), whose
# numbers the sampler sums into its summary.
_RECORD_EXTRAS = {"edges": ("log_px",), "map_dag": ("log_score",),
                  "batch": ("sweep_seconds", "parents_seconds", "le_seconds")}
_RECORD_COUNTS = {"batch": ("redrawn", "reads", "chunks")}


def valid_record(rec) -> bool:
    """Whether a journal line is a task record as `JournaledTask` (or `outputs.tasks.PartTask`)
    writes it: task and stage strings, a CRC-32C, finite times, and the stage's own numbers
    and counts. Everything read from disk goes through here, so a damaged or hand-edited
    line is never trusted."""
    if not isinstance(rec, dict):
        return False
    task, stage, crc = rec.get("task"), rec.get("stage"), rec.get("crc")
    # a tier's tasks are "tierJ/stage:…" (bigbn/plan/tiers.py)
    if not (isinstance(task, str) and isinstance(stage, str)
            and task.rsplit("/", 1)[-1].split(":", 1)[0] == stage):
        return False
    if not (isinstance(crc, int) and not isinstance(crc, bool) and 0 <= crc < 2**32):
        return False
    fields = ("seconds", "start", "end") + _RECORD_EXTRAS.get(stage, ())
    return all(_number(rec.get(f)) for f in fields) \
        and all(type(rec.get(f)) is int and rec.get(f) >= 0 for f in _RECORD_COUNTS.get(stage, ()))


def _not_a_journal(path, kind: str = "not a file") -> WorkdirError:
    """The error of a journal file's name held by something else (a folder, a FIFO, ...)."""
    return WorkdirError(f"{path} is {kind}, and a journal of the run has its name; remove it, or "
                        "run the same command with --fresh to start over")


class Journal:
    """The task journal: one JSON line per finished task, appended and fsynced.

    ``owner`` (host, pid) is the process that holds the run's lock, None when there is no
    lock (the engine used directly). That process appends to ``journal.jsonl``; any other
    (a dask.distributed worker) to ``journal-HOST-PID.jsonl``, so that no two processes,
    maybe on different hosts of a shared file system, ever append to the same file.
    Reading merges every journal file.
    """

    def __init__(self, root: Path, owner: tuple[str, int] | None = None):
        self.root = root
        self.owner = owner
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.root / JOURNAL

    def own_file(self) -> Path:
        me = (socket.gethostname(), os.getpid())
        if self.owner is None or tuple(self.owner) == me:
            return self.path
        return self.root / f"journal-{me[0]}-{me[1]}.jsonl"

    def files(self) -> list[Path]:
        """The journal files; WorkdirError when one is not a file (a folder or a FIFO of a
        journal's name: reading it failed with an OSError, or waited forever)."""
        out = sorted(self.root.glob(JOURNAL_GLOB))
        for path in out:
            if not path.is_file():
                raise _not_a_journal(path)
        return out

    def append(self, record: dict) -> None:
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        with self._lock:
            fd = open_fd(self.own_file(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, _not_a_journal)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def records(self) -> dict[str, dict]:
        """Finished tasks (from every journal file): task id -> its record. A torn line
        (crash or full disk mid-write) and a record that is not what a task writes (see
        `valid_record`) are ignored: their task simply runs again."""
        out: dict[str, dict] = {}
        for path in self.files():
            with open_file(path, "rb", _not_a_journal) as fh:  # typed as opened: `files` checked the name
                for raw in fh:
                    try:
                        rec = json.loads(raw)
                    except (ValueError, RecursionError):  # RecursionError: absurdly nested
                        continue
                    if valid_record(rec):
                        out[rec["task"]] = rec
        return out

    def repair(self) -> None:
        """End a torn last line in every journal file so that later lines stay whole."""
        for path in self.files():
            with open_file(path, "rb+", _not_a_journal) as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() == 0:
                    continue
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())

    def clear(self) -> None:
        for path in self.root.glob(JOURNAL_GLOB):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


class RunLock:
    """Exclusive lock for one run on ``WORKDIR/lock`` (see `RunLock.hold`)."""

    def __init__(self, root: Path):
        self.root = root
        self.path = root / LOCK

    @contextlib.contextmanager
    def hold(self):
        """Exclusive lock for one run: flock on WORKDIR/lock, released by the kernel when
        the process dies (so a lock left by a killed run is never stale). The file holds
        the holder's pid, host and start time, for messages and `bigbn status`."""
        fd = self._open(os.O_RDWR | os.O_CREAT)
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
                yield (me["host"], me["pid"])
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _open(self, flags: int) -> int:
        """The lock file opened (`open_fd`): a FIFO in its place neither waits for a writer
        nor passes for the lock (flock works on one, its truncation fails); a folder or a
        socket is refused too, each as one line."""
        return open_fd(self.path, flags, lambda path, kind: WorkdirError(
            f"{path} is {kind}, not the run's lock file; remove it, then run the same command again"))

    @staticmethod
    def _holder(fd: int) -> dict:
        try:
            data = json.loads(os.pread(fd, 4096, 0) or b"{}")
            return data if isinstance(data, dict) else {}
        except ValueError:
            return {}

    def active_holder(self) -> dict | None:
        """The holder (pid, host, since) of a run active on this workdir, else None."""
        try:
            fd = self._open(os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._holder(fd) or {"pid": "?", "host": "?"}
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)


class Workdir:
    """One work directory: its table store, journal and lock; picklable (run.json is
    read and written by bigbn/store/rundir.py).

    Cheap to create; the parts keep their state (open arrays, the journal's thread lock)
    in the instance, so nothing outlives the run that made it. ``owner`` is the
    (host, pid) of the process holding the run's lock (see `Journal`).
    """

    def __init__(self, root: str | os.PathLike, owner: tuple[str, int] | None = None, scope: str = ""):
        self.root = Path(root)
        self.owner = tuple(owner) if owner is not None else None
        self.scope = scope  # a tier's tables live in a folder of their own (bigbn/plan/tiers.py)
        self.store = TableStore(self.root / TABLES / scope if scope else self.root / TABLES)
        self.task_journal = Journal(self.root, self.owner)
        self.run_lock = RunLock(self.root)

    def __reduce__(self):
        return (Workdir, (str(self.root), self.owner, self.scope))

    @property
    def tables(self) -> Path:
        return self.store.path

    @property
    def journal_path(self) -> Path:
        return self.task_journal.path

    # -- the parts' operations, for callers that hold only a Workdir -------------------------
    def create_tables(self, plan: Plan) -> None:
        self.store.create(plan)

    def array(self, name: str) -> zarr.Array:
        return self.store.array(name)

    def chunk_file(self, name: str, chunk_coords: tuple[int, ...]) -> Path:
        return self.store.chunk_file(name, chunk_coords)

    def read(self, name: str, index, evict: bool = False) -> np.ndarray:
        return self.store.read(name, index, evict)

    def write(self, name: str, index, data: np.ndarray, chunk_coords: list[tuple[int, ...]]) -> None:
        self.store.write(name, index, data, chunk_coords)

    def region_index(self, region: Region) -> tuple[slice, ...]:
        return self.store.region_index(region)

    def intact(self, spec, rec: dict) -> bool:
        """Whether the regions task ``spec`` (a `plan.TaskSpec`) wrote still have the CRC
        its journal record ``rec`` holds (missing, truncated or unreadable chunks count as
        not intact)."""
        try:
            crc = 0
            for region in spec.writes:
                crc = checksum(self.read_region(region), crc)
            return crc == rec.get("crc")
        except Exception:  # noqa: BLE001 - a truncated or unreadable chunk is just "bad"
            return False

    def read_region(self, region: Region) -> np.ndarray:
        """A region's values, C-contiguous, shaped as its box (through `read`, so that a
        wrapper of ``read`` and ``write`` sees every region a task touches)."""
        return self.read(region.table, self.region_index(region))

    def write_region(self, region: Region, data: np.ndarray) -> None:
        """Write a region (data of its box's size, any shape), fsync its chunk files."""
        index = self.region_index(region)
        box = tuple(sl.stop - sl.start for sl in index)
        self.write(region.table, index, np.asarray(data).reshape(box), list(region.chunks))

    def delete_region(self, region: Region) -> None:
        self.store.delete_region(region)

    def journal(self) -> dict[str, dict]:
        return self.task_journal.records()

    def journal_files(self) -> list[Path]:
        return self.task_journal.files()

    def journal_append(self, record: dict) -> None:
        self.task_journal.append(record)

    def repair_journal(self) -> None:
        self.task_journal.repair()

    def lock(self):
        """Context manager: hold the run's lock (yields this process's (host, pid))."""
        return self.run_lock.hold()

    def active_holder(self) -> dict | None:
        return self.run_lock.active_holder()

    def clear(self) -> None:
        """Remove tables, journal files and outputs (``--fresh``), run.json last: killed
        part way, the folder is still bigbn's (`rundir.check_is_ours`) and --fresh goes
        on. (run.json went before the outputs: a kill between left edges.csv and the rest
        without it, a folder every later command refused, --fresh included.)"""
        self.store.clear()
        self.task_journal.clear()
        for name in OUTPUTS:
            (self.root / name).unlink(missing_ok=True)
            (self.root / (name + ".tmp")).unlink(missing_ok=True)  # a write's, killed (`write_whole`)
        for glob in (SAMPLES_GLOB, EFFECTS_GLOB):
            for path in self.root.glob(glob):
                shutil.rmtree(path, ignore_errors=True)
        (self.root / RUN_JSON).unlink(missing_ok=True)
