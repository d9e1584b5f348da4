"""The work directory's table I/O: whole chunks of L and B go by plain file I/O
(TableStore._whole_chunk) and must be exactly what zarr reads and writes."""

import numpy as np
import pytest
import zarr

from bigbn.errors import WorkdirError
from bigbn.plan import Plan, Region
from bigbn.workdir import Workdir


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
