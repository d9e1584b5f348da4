"""The work directory's table I/O: whole chunks of L and B go by plain file I/O
(TableStore._whole_chunk) and must be exactly what zarr reads and writes."""

import numpy as np
import pytest
import zarr

from bigbn.errors import WorkdirError
from bigbn.plan.lattice import Plan, Region
from bigbn.store.workdir import Workdir


@pytest.fixture
def wd(tmp_path):
    w = Workdir(tmp_path)
    w.create_tables(Plan(8, 2, 5))  # forward and backward: 2^8 entries in chunks of 32
    return w


def test_whole_chunks_are_the_files_zarr_reads_and_writes(wd):
    rng = np.random.default_rng(0)
    x = rng.normal(size=32)
    x[3] = -np.inf
    wd.write_region(Region("forward", ((2,),)), x)  # plain file I/O
    z = zarr.open_array(wd.tables / "forward", mode="r")
    np.testing.assert_array_equal(z[64:96], x)  # zarr reads it
    y = rng.normal(size=32)
    z = zarr.open_array(wd.tables / "forward", mode="r+")
    z[96:128] = y  # zarr writes it
    np.testing.assert_array_equal(wd.read("forward", slice(96, 128)), y)
    np.testing.assert_array_equal(wd.read_region(Region("forward", ((3,),))), y)
    # not whole chunks: zarr's own path, same values
    np.testing.assert_array_equal(wd.read("forward", slice(60, 100)), np.concatenate([np.full(4, np.nan), x[:32], y[:4]]))
    wd.write("forward", slice(0, 64), np.arange(64.0), [(0,), (1,)])
    np.testing.assert_array_equal(wd.read("forward", slice(0, 32)), np.arange(32.0))


def test_one_byte_tables_too(tmp_path):
    """The MAP stage's best sinks (int8, no byte order) go the same way."""
    w = Workdir(tmp_path)
    w.create_tables(Plan(8, 2, 5, map_dag=True, posterior=False))
    sinks = np.arange(32, dtype=np.int8) % 7
    w.write_region(Region("map_sink", ((1,),)), sinks)
    np.testing.assert_array_equal(zarr.open_array(w.tables / "map_sink", mode="r")[32:64], sinks)
    np.testing.assert_array_equal(w.read("map_sink", slice(32, 64)), sinks)
    assert (w.read("map_sink", slice(0, 32)) == -1).all()  # its fill value


def test_a_chunk_never_written_reads_as_the_fill_value(wd):
    assert np.isnan(wd.read("backward", slice(32, 64))).all()


def test_a_damaged_chunk_file_is_an_error_naming_it(wd):
    wd.write_region(Region("backward", ((1,),)), np.ones(32))
    f = wd.tables / "backward" / "c" / "1"
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(WorkdirError, match=r"backward/c/1: chunk file of 100 bytes, expected 256"):
        wd.read("backward", slice(32, 64))
    f.write_bytes(b"\0" * 300)
    with pytest.raises(WorkdirError, match="more than 256 bytes"):
        wd.read("backward", slice(32, 64))
    wd.write_region(Region("backward", ((1,),)), np.full(32, 2.0))  # a rewrite repairs it
    assert f.stat().st_size == 256
    np.testing.assert_array_equal(wd.read("backward", slice(32, 64)), 2.0)


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_chunk_written_again_never_writes_through_a_link(wd, tmp_path, link):
    """A chunk file that is a symlink or a hard link (a workdir cloned by cp -s or cp -l)
    is replaced by a file of its own when written: the file it shared is left as it was."""
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"somebody else's" * 20)
    f = wd.tables / "backward" / "c" / "1"
    f.parent.mkdir(parents=True, exist_ok=True)
    (f.symlink_to if link == "symlink" else f.hardlink_to)(outside)
    wd.write_region(Region("backward", ((1,),)), np.full(32, 2.0))
    assert outside.read_bytes() == b"somebody else's" * 20
    assert not f.is_symlink() and f.stat().st_nlink == 1
    np.testing.assert_array_equal(wd.read("backward", slice(32, 64)), 2.0)


def test_a_folder_in_the_place_of_a_tables_file_is_a_workdir_error_saying_fresh(wd, tmp_path):
    """A folder where a chunk file or a table's zarr.json belongs was an OSError (`bigbn
    run`: "Is a directory", while the readers said to run it again)."""
    f = wd.tables / "backward" / "c" / "1"
    f.mkdir(parents=True)
    with pytest.raises(WorkdirError, match=r"backward/c/1 is in the way of the run's tables.*--fresh"):
        wd.write_region(Region("backward", ((1,),)), np.ones(32))
    with pytest.raises(WorkdirError, match=r"backward/c/1 is in the way of the run's tables.*--fresh"):
        wd.delete_region(Region("backward", ((1,),)))
    w = Workdir(tmp_path / "other")
    meta = w.tables / "forward" / "zarr.json"
    meta.mkdir(parents=True)
    with pytest.raises(WorkdirError, match=r"forward/zarr.json is in the way of the run's tables.*--fresh"):
        w.create_tables(Plan(8, 2, 5))


def test_a_fifo_in_the_place_of_a_chunk_file_is_refused_never_waited_on(wd):
    """A FIFO where a chunk file belongs made `bigbn sample` and `bigbn run` wait forever
    for a writer (reading) or a reader (writing). The test holds both ends open (and data
    in the pipe) only so that code that opens it blindly fails instead of blocking."""
    import os

    f = wd.tables / "backward" / "c" / "1"
    f.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(f)
    fd = os.open(f, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, b"\0" * 300)
        with pytest.raises(WorkdirError, match=r"backward/c/1 is in the way .*not a regular file.*--fresh"):
            wd.read("backward", slice(32, 64))
        with pytest.raises(WorkdirError, match=r"backward/c/1 is in the way .*not a regular file.*--fresh"):
            wd.write_region(Region("backward", ((1,),)), np.ones(32))
    finally:
        os.close(fd)


def test_a_folder_or_fifo_named_as_a_journal_or_the_lock_is_a_workdir_error(tmp_path):
    """A folder of a journal's name was an OSError out of every reader (bigbn.open's a
    traceback), a FIFO of that name a wait forever; --fresh removes either. A folder named
    lock: an OSError out of every run and sample."""
    import os

    w = Workdir(tmp_path)
    (tmp_path / "journal.jsonl").mkdir()
    with pytest.raises(WorkdirError, match=r"journal.jsonl is not a file.*remove it.*--fresh"):
        w.journal()
    os.mkfifo(tmp_path / "journal-host-1.jsonl")
    with pytest.raises(WorkdirError, match=r"journal-host-1.jsonl is not a file"):
        w.journal()
    w.clear()
    assert w.journal() == {} and not (tmp_path / "journal.jsonl").exists()
    (tmp_path / "lock").mkdir()
    with pytest.raises(WorkdirError, match=r"lock is a folder, not the run's lock file; remove it"):
        with w.lock():
            pass


def test_a_journal_replaced_by_a_fifo_after_its_name_was_checked_is_refused_not_waited_on(tmp_path, monkeypatch):
    """Journal.files checks each journal's name, then records / repair / append opened it:
    a FIFO put there in between made them wait forever. The type is now checked on the
    descriptor opened (`open_fd`). The race is made certain by a `files` that no longer
    checks. Each call runs on a thread of its own: one that still waits after 10 s fails
    the test, and closing the test's end of the FIFO then lets it finish."""
    import os
    import re
    import threading

    from bigbn.store.workdir import Journal

    w = Workdir(tmp_path)
    fifo = tmp_path / "journal.jsonl"
    os.mkfifo(fifo)
    monkeypatch.setattr(Journal, "files", lambda self: [fifo])
    monkeypatch.setattr(Journal, "own_file", lambda self: fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, b'{"task":"x"}\n')
        for act in (w.journal, w.task_journal.repair, lambda: w.task_journal.append({"task": "y"})):
            got = []

            def call(act=act):
                try:
                    act()
                except Exception as e:  # noqa: BLE001 - the test looks at what it was
                    got.append(e)
            th = threading.Thread(target=call, daemon=True)
            th.start()
            th.join(10)
            assert not th.is_alive(), f"{act} waited on the FIFO"
            assert got and isinstance(got[0], WorkdirError), got
            assert re.search(r"journal.jsonl is a FIFO, and a journal of the run has its name.*--fresh", str(got[0]))
    finally:
        os.close(fd)


def test_an_evicted_chunk_is_read_whole_then_dropped_from_the_page_cache(wd, monkeypatch):
    """read(..., evict=True) (a backward task's L, read once in that stage) returns the
    same values and then advises the kernel to drop that one file's pages (DONTNEED over
    the whole file); zarr's path and missing chunks are untouched by it."""
    import os

    if not hasattr(os, "posix_fadvise"):
        pytest.skip("no posix_fadvise here: eviction does nothing")
    advised = []
    real = os.posix_fadvise

    def spy(fd, offset, length, advice):
        advised.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length, advice))
        return real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", spy)
    x = np.random.default_rng(1).normal(size=32)
    wd.write_region(Region("forward", ((2,),)), x)
    np.testing.assert_array_equal(wd.read("forward", slice(64, 96), evict=True), x)
    assert advised == [(str(wd.tables / "forward" / "c" / "2"), 0, 0, os.POSIX_FADV_DONTNEED)]
    np.testing.assert_array_equal(wd.read("forward", slice(64, 96)), x)  # from the disk now
    assert len(advised) == 1  # only when asked
    np.testing.assert_array_equal(wd.read("forward", slice(60, 100), evict=True)[4:36], x)  # zarr's path
    assert np.isnan(wd.read("forward", slice(96, 128), evict=True)).all()  # never written
    assert len(advised) == 1


def test_a_refused_eviction_is_only_advice(wd, monkeypatch):
    """A filesystem that refuses posix_fadvise (EINVAL, ESPIPE) leaves the read as it is."""
    import os

    def refuse(fd, offset, length, advice):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", refuse, raising=False)
    x = np.arange(32.0)
    wd.write_region(Region("forward", ((1,),)), x)
    np.testing.assert_array_equal(wd.read("forward", slice(32, 64), evict=True), x)


def test_checksum_is_crc32c_of_the_bytes_chained_and_leaves_the_array_writable():
    """workdir.checksum (the journal's crc of every chunk) against the bitwise CRC-32C of
    naive.py: the standard check value, arrays of every shape and layout the tasks
    write, chaining over several arrays as a task's record does."""
    import naive
    from bigbn.store.workdir import checksum

    assert naive.crc32c(b"123456789") == 0xE3069283  # the reference's own check value
    assert checksum(np.frombuffer(b"123456789", dtype=np.uint8)) == 0xE3069283
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 5, 7))
    b = np.asfortranarray(rng.normal(size=(4, 6)))[:, ::2]  # neither C- nor F-contiguous
    c = np.array([-np.inf, np.nan, 0.0, -0.0])
    for x in (a, b, c, np.zeros(0)):
        assert checksum(x) == naive.crc32c(np.ascontiguousarray(x).tobytes())
    assert checksum(c, checksum(b, checksum(a))) == naive.crc32c(
        c.tobytes(), naive.crc32c(np.ascontiguousarray(b).tobytes(), naive.crc32c(a.tobytes())))
    assert a.flags.writeable and c.flags.writeable


def test_tables_zarr_a_file_is_a_one_line_error_and_fresh_clears_it(tmp_path):
    """Issue #37: tables.zarr a file, not a folder, was 'Not a directory: .../zarr.json' (an
    OSError's text) from `bigbn run`, and 'beta is missing or damaged; run the same command
    again' (which then failed so) from `bigbn sample`."""
    import shutil

    from click.testing import CliRunner

    import helpers as h
    from bigbn.cli.main import main
    from test_cli import assert_one_line_error

    wd = tmp_path / "w"
    args = ["run", str(h.ROOT / "examples" / "asia.csv"), "-w", str(wd), "-k", "1", "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    shutil.rmtree(wd / "tables.zarr")
    (wd / "tables.zarr").write_text("not a folder\n")
    assert_one_line_error(CliRunner().invoke(main, args),
                          f"{wd / 'tables.zarr'} is a file, not the folder of the run's tables; run the "
                          "same command with --fresh to start over")
    assert_one_line_error(CliRunner().invoke(main, ["sample", "-w", str(wd), "-T", "5"]),
                          f"{wd / 'tables.zarr'} is a file, not the folder of the run's tables; run the "
                          "same `bigbn run` command with --fresh to start over, then sample")
    assert (wd / "tables.zarr").read_text() == "not a folder\n"  # refused, nothing changed
    r = CliRunner().invoke(main, args + ["--fresh"])
    assert r.exit_code == 0, r.output
    assert (wd / "tables.zarr").is_dir()
    assert CliRunner().invoke(main, ["sample", "-w", str(wd), "-T", "5"]).exit_code == 0


def test_plain_layouts_name_the_chunk_files_zarr_names(tmp_path):
    """Every table a plan makes (L, B, the γ tables, β, the MAP tables, a stored α) has the
    plain form (`workdir.Layout`, read from zarr.json without zarr), and its layout is
    zarr's: shape, chunks, type, fill value, and each chunk's file as zarr's chunk key
    encoding names it."""
    from bigbn.store.workdir import plain_layout

    w = Workdir(tmp_path)
    plan = Plan(8, 2, 5, map_dag=True, alpha_mode="store")
    w.create_tables(plan)
    assert set(plan.tables()) >= {"forward", "backward", "gamma_parts", "beta", "map_sink", "alpha"}
    for name in plan.tables():
        lay = plain_layout(w.tables / name / "zarr.json")
        z = zarr.open_array(w.tables / name, mode="r")
        assert lay is not None, name
        assert (lay.shape, lay.chunks, lay.dtype) == (z.shape, z.chunks, z.dtype), name
        assert lay.fill == z.fill_value or (np.isnan(lay.fill) and np.isnan(z.fill_value)), name
        for cc in {(0,) * z.ndim, tuple(s // c - 1 for s, c in zip(z.shape, z.chunks))}:
            want = tmp_path / "tables.zarr" / name / z.metadata.encode_chunk_key(cc)
            assert w.chunk_file(name, cc) == want, (name, cc)
        assert w.store.matches(plan, name)


def test_boxes_of_whole_chunks_read_as_zarr_reads_them(wd, tmp_path, monkeypatch):
    """Reads of whole chunks of any shape (one or several, as `bigbn sample` and a
    finished run's readers ask for β, γ and its parts) by plain file I/O, and single
    whole chunks written so, against zarr reading and writing the same arrays; chunks
    never written read as the fill value."""
    from bigbn.store.workdir import TableStore

    rng = np.random.default_rng(5)
    w = Workdir(tmp_path / "nd")
    plan = Plan(6, 2, 3)
    w.create_tables(plan)
    shape, chunks = plan.tables()["gamma_parts"][:2]
    z = zarr.open_array(w.tables / "gamma_parts", mode="r+")
    parts = rng.normal(size=shape)
    z[:] = parts
    z[2] = np.nan  # one part unset: zarr drops a chunk of fill values

    def no_zarr(self, name):
        raise AssertionError(f"zarr asked for {name}: not the plain file path")

    monkeypatch.setattr(TableStore, "array", no_zarr)
    np.testing.assert_array_equal(w.read("gamma_parts", slice(None)), np.asarray(z[:]))
    np.testing.assert_array_equal(w.read("gamma_parts", (slice(1, 3),)), np.asarray(z[1:3]))
    np.testing.assert_array_equal(w.read_region(Region("gamma_parts", ((5, 0, 0),))), np.asarray(z[5:6]))
    part = rng.normal(size=chunks)
    w.write_region(Region("gamma_parts", ((6, 0, 0),)), part)  # a single chunk: plain file I/O
    np.testing.assert_array_equal(zarr.open_array(w.tables / "gamma_parts", mode="r")[6:7], part)
    beta = rng.normal(size=plan.tables()["beta"][0])
    w.write("beta", slice(None), beta, [(0, 0)])
    np.testing.assert_array_equal(zarr.open_array(w.tables / "beta", mode="r")[:], beta)
    np.testing.assert_array_equal(w.read("beta", slice(None)), beta)
    np.testing.assert_array_equal(w.read("forward", slice(0, 64)), np.full(64, np.nan))  # two chunks, unwritten
    x = rng.normal(size=64)
    zarr.open_array(wd.tables / "forward", mode="r+")[64:128] = x
    np.testing.assert_array_equal(wd.read("forward", slice(64, 128)), x)  # two chunks
    np.testing.assert_array_equal(wd.read("forward", (slice(np.int64(64), np.int64(96)),)), x[:32])
    store = Workdir(tmp_path / "alpha")
    store.create_tables(Plan(6, 2, 3, alpha_mode="store"))
    alpha = rng.normal(size=plan.tables()["forward"][0][0] // 2)
    shape_a, chunks_a = Plan(6, 2, 3, alpha_mode="store").tables()["alpha"][:2]
    za = zarr.open_array(store.tables / "alpha", mode="r+")
    za[4] = rng.normal(size=shape_a[1])
    row = np.asarray(za[4])
    got = store.read("alpha", (4, slice(chunks_a[1], 2 * chunks_a[1])))  # a row's chunk, as alpha_span reads it
    np.testing.assert_array_equal(got, row[chunks_a[1]:2 * chunks_a[1]])
    assert got.shape == (chunks_a[1],) and alpha.size
    np.testing.assert_array_equal(store.read("alpha", (np.int64(4),)), row)


def test_tables_of_another_form_go_through_zarr(tmp_path):
    """A table zarr.json describes otherwise (here compressed) is read and written by zarr,
    with the same values; its layout is None."""
    import zarr.codecs

    from bigbn.store.workdir import plain_layout

    w = Workdir(tmp_path)
    w.create_tables(Plan(8, 2, 5))
    (w.tables / "forward" / "zarr.json").unlink()
    zarr.open_group(w.tables, mode="a").create_array("forward", shape=(256,), chunks=(32,), dtype="f8",
                                                      compressors=zarr.codecs.ZstdCodec(), fill_value=np.nan,
                                                      overwrite=True)
    w.store.forget()
    assert plain_layout(w.tables / "forward" / "zarr.json") is None
    x = np.linspace(0, 1, 32)
    w.write_region(Region("forward", ((3,),)), x)
    np.testing.assert_array_equal(zarr.open_array(w.tables / "forward", mode="r")[96:128], x)
    np.testing.assert_array_equal(w.read("forward", slice(96, 128)), x)
    assert w.chunk_file("forward", (3,)).stat().st_size < x.nbytes  # compressed: zarr wrote it


@pytest.mark.parametrize("meta", ['{"zarr_format": 3', "[]", '{"zarr_format": 2}', ""])
def test_damaged_metadata_is_no_layout(tmp_path, meta):
    from bigbn.store.workdir import plain_layout

    (tmp_path / "zarr.json").write_text(meta)
    assert plain_layout(tmp_path / "zarr.json") is None
    assert plain_layout(tmp_path / "missing.json") is None


def test_a_float_fill_value_past_float64_is_no_layout(wd):
    """An integer fill value beyond float64's range (zarr refuses it) is no layout, not
    an OverflowError out of plain_layout."""
    from bigbn.store.workdir import plain_layout

    meta = wd.tables / "forward" / "zarr.json"
    meta.write_text(meta.read_text().replace('"NaN"', "1" + "0" * 400))
    assert plain_layout(meta) is None


def test_a_layout_is_found_only_for_metadata_zarr_opens(tmp_path):
    """`plain_layout` is strict: for metadata zarr refuses (an unknown key, a dimension
    name too many, configurations zarr does not know, a fill value the type cannot hold),
    or reads otherwise, it finds no layout; where it finds one, zarr opens the table with
    the same shape, chunks and type, so a reader and a run never judge a table apart."""
    import json

    from bigbn.store.workdir import plain_layout

    w = Workdir(tmp_path)
    plan = Plan(8, 2, 5, map_dag=True)
    w.create_tables(plan)
    edits = {
        "forward": [lambda m: m.update(foo={"x": 1}), lambda m: m.update(dimension_names=["a", "b"]),
                    lambda m: m.update(dimension_names=["a"]), lambda m: m["chunk_grid"]["configuration"].update(x=1),
                    lambda m: m["codecs"][0]["configuration"].update(x=1), lambda m: m.update(fill_value="nan"),
                    lambda m: m.update(fill_value=0.5), lambda m: m.update(storage_transformers=[{"name": "x"}]),
                    lambda m: m["codecs"][0]["configuration"].update(endian="bogus"),
                    lambda m: m["chunk_key_encoding"].update(name="v2"), lambda m: m.update(attributes=[])],
        "map_sink": [lambda m: m.update(fill_value="NaN"), lambda m: m.update(fill_value=1.5),
                     lambda m: m.update(fill_value=300), lambda m: m.update(fill_value=-128),
                     lambda m: m["codecs"][0].update(configuration={"endian": "bogus"})],
    }
    found = refused = 0
    for name, changes in edits.items():
        meta = w.tables / name / "zarr.json"
        original = meta.read_text()
        for change in changes:
            m = json.loads(original)
            change(m)
            meta.write_text(json.dumps(m))
            lay = plain_layout(meta)
            try:
                z = zarr.open_array(w.tables / name, mode="r")
            except Exception:  # noqa: BLE001 - zarr refuses it
                z = None
            if lay is not None:
                found += 1
                assert z is not None, (name, m)
                assert (lay.shape, lay.chunks, lay.dtype) == (z.shape, z.chunks, z.dtype), (name, m)
            else:
                refused += 1
            assert w.store.readable(plan, name) == w.store.matches(plan, name) or lay is None and z is not None
        meta.write_text(original)
    assert found >= 3 and refused >= 8


def test_metadata_zarr_refuses_is_remade_and_recomputed_by_the_next_run(tmp_path):
    """A table whose zarr.json zarr refuses (a key it does not know) counts as damaged for
    the run: the same `learn` again makes it anew and recomputes it, the posterior equal
    to the first run's (the reader's own parse must not call such a run finished)."""
    import json

    import helpers as h

    import bigbn

    wd = tmp_path / "w"
    first = bigbn.learn(h.ROOT / "examples" / "asia.csv", workdir=wd, max_parents=2, map_dag=True)
    meta = wd / "tables.zarr" / "posterior" / "zarr.json"
    m = json.loads(meta.read_text())
    m["foo"] = {"x": 1}
    meta.write_text(json.dumps(m))
    again = bigbn.learn(h.ROOT / "examples" / "asia.csv", workdir=wd, max_parents=2, map_dag=True)
    np.testing.assert_array_equal(again.posterior, first.posterior)
    assert np.isfinite(again.posterior).all()
    np.testing.assert_array_equal(bigbn.open(wd).posterior, first.posterior)


def test_open_file_refuses_anything_but_a_regular_file_at_once(tmp_path):
    """`open_file` / `read_file`, the readers of run.json, summary.json, the CSVs and
    samples.npz: a FIFO (no writer: it opens at once and is refused), a folder, a socket
    and a device are each a WorkdirError naming the path and what it is; a missing file is
    FileNotFoundError, for the caller; a regular file (or a symlink to one) reads as usual."""
    import os
    import socket

    from bigbn.store.workdir import open_file, read_file

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "socket"))
    try:
        for name, kind in (("fifo", "a FIFO"), ("folder", "a folder"), ("socket", "a socket")):
            with pytest.raises(WorkdirError, match=rf"^{tmp_path / name} is {kind}, not a file as bigbn writes "
                                                   r"it; remove it, then run the command that wrote it again$"):
                read_file(tmp_path / name)
    finally:
        sock.close()
    with pytest.raises(WorkdirError, match=r"^/dev/null is a device"):
        read_file("/dev/null")
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "missing")
    (tmp_path / "f.csv").write_text("a,b\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "f.csv")
    with open_file(tmp_path / "link.csv", "r", newline="") as fh:
        assert fh.read() == "a,b\n"
