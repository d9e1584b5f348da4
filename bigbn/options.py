"""One validation of the options that are not score parameters, shared by the CLI and the API.

Each function takes the value as a caller gives it (a Python value from the API, or what
click parsed) and returns it normalised, or raises `OptionError` with one line naming the
option; the CLI only turns that error into ``Error: ...`` and exit status 1. (The score
and its parameters are validated where the scores are defined.)
"""

from __future__ import annotations

import math
import numbers
import os
import re
from fractions import Fraction

from bigbn.errors import OptionError
from bigbn.plan.lattice import ALPHA_MODES, MAX_NODES

MAX_SAMPLES = 10**8

#: The most parallel tasks `workers` accepts. A plan counts the chunks its workers hold in
#: int64 arrays (`bigbn.plan.lattice.live_chunks`): 10^20 was numpy's "Python int too large
#: to convert to C long" traceback; and no lattice has more than 2^MAX_NODES / 2 chunk tasks
#: a level, nor a machine or cluster a million cores.
MAX_WORKERS = 2**20


def _integer(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise OptionError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise OptionError(f"{what} must be a number, got {value!r}")
    x = as_float(value, what)
    if not math.isfinite(x):
        raise OptionError(f"{what} must be finite, got {value!r}")
    return x


def as_float(value, what: str) -> float:
    """``float(value)`` for a real number ``value``; a Python int beyond float64's range
    (10**400: `float` raises OverflowError, which reached callers as a traceback) is an
    OptionError naming ``what``, its size told in digits, not written out."""
    try:
        return float(value)
    except OverflowError:
        # its digits from its bits (str() of an int over 4300 digits is a ValueError): the
        # estimate is the count or one less, and a power of ten tells which
        v = abs(int(value))
        digits = int(v.bit_length() * math.log10(2))
        digits += v >= 10**digits
        raise OptionError(f"{what} must be finite, got a number of {digits} digits, "
                          "beyond float64's range") from None


def max_parents(value, what: str = "max parents") -> int:
    """Maximum number of parents of every node: an integer ≥ 0 (capped at n - 1 later).
    ``what``: the option's name in messages (the CLI gives its flag, e.g. "--max-parents");
    so for every function here."""
    k = _integer(value, what)
    if k < 0:
        raise OptionError(f"{what} must be ≥ 0, got {k}")
    return k


def n_nodes(value, what: str = "number of variables", least: int = 2) -> int:
    """Number of variables of a planned run: ``least`` (2; a time series' variables per
    slice, 1) to MAX_NODES."""
    n = _integer(value, what)
    if not least <= n <= MAX_NODES:
        raise OptionError(f"{what} must be between {least} and {MAX_NODES}, got {n}")
    return n


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def workers(value, what: str = "workers") -> int:
    """Parallel tasks: None means every core this process may use."""
    if value is None:
        return default_workers()
    w = _integer(value, what)
    if w < 1:
        raise OptionError(f"{what} must be ≥ 1, got {w}")
    if w > MAX_WORKERS:
        raise OptionError(f"{what} must be at most {MAX_WORKERS:,} (parallel tasks), got {w}")
    return w


def machine_memory() -> int:
    """The machine's RAM, bytes."""
    import psutil

    return int(psutil.virtual_memory().total)


def default_memory() -> int:
    """Memory budget when none is given: a quarter of the machine's RAM, at most 8 GiB."""
    return int(min(machine_memory() // 4, 8 << 30))


# an "i" only after a unit ("5i" and "5ib" were read as 5 bytes)
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(?:([kmgt])i?)?b?\s*$", re.I)


def memory(value, what: str = "memory budget") -> int:
    """Memory budget in bytes: None (the default), a positive integer, or text such as
    '4G', '512M', '2.5GiB'."""
    if value is None:
        return default_memory()
    if isinstance(value, str):
        # read exactly up to 4000 characters (a plan of a 400-digit budget is shown, as any
        # other); past Python's 4300 digits Fraction and int() of a text are a ValueError,
        # so a longer text is no size read
        m = _SIZE.match(value) if len(value) <= 4000 else None
        if not m:
            shown = repr(value) if len(value) <= 40 else f"{value[:20]!r}… ({len(value)} characters)"
            raise OptionError(f"{what}: cannot read size {shown} (examples: 4G, 512M, 2.5GiB)")
        mult = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[(m.group(2) or "").lower()]
        # exactly, as a fraction: float() made 400 digits inf, and int(inf) an OverflowError
        # traceback (a size as large as an int given from Python is taken the same way)
        size = int(Fraction(m.group(1)) * mult)
    else:
        size = _integer(value, what)
    if size <= 0:
        raise OptionError(f"{what} must be positive, got {value!r}")
    return size


def disk_budget(value, what: str = "disk budget") -> int | None:
    """Disk budget in bytes (None: none, the fastest plan), read as `memory` reads sizes."""
    return None if value is None else memory(value, what)


def chunk_bits(value, what: str = "chunk bits") -> int | None:
    if value is None:
        return None
    c = _integer(value, what)
    if not 1 <= c <= MAX_NODES:
        raise OptionError(f"{what} must be between 1 and {MAX_NODES}, got {c}")
    return c


def alpha_mode(value) -> str | None:
    if value is not None and value not in ALPHA_MODES:
        raise OptionError(f"alpha mode {value!r}: choose one of {', '.join(ALPHA_MODES)}")
    return value


def scheduler(value):
    """threads, dask, sync, processes, a scheduler address (tcp://, tls://, inproc://) or a
    dask.distributed Client."""
    if isinstance(value, str):
        if value.startswith(("tcp://", "tls://")):
            _check_address(value)
            return value
        if value in ("threads", "dask", "sync", "processes") or value.startswith("inproc://"):
            return value
        raise OptionError(f"unknown scheduler {value!r}: use threads, dask, sync, processes or tcp://HOST:PORT")
    try:  # lazily: dask.distributed is needed only for a cluster
        from distributed import Client
    except ImportError:
        Client = None
    if Client is not None and isinstance(value, Client):
        return value
    # any other object was taken as a Client until the engine met it, after the scores, the
    # plan and the work directory's tables were made
    shown = " ".join(repr(value).split())
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise OptionError(f"scheduler must be threads, dask, sync, processes, tcp://HOST:PORT or a dask.distributed "
                      f"Client, got {shown} ({type(value).__name__})")


def _check_address(value: str) -> None:
    """A tcp:// or tls:// scheduler address must be HOST:PORT (dask.distributed raised a
    ValueError from deep inside Client for "tcp://" or "tcp://host")."""
    from distributed.comm.addressing import parse_host_port

    try:
        port = parse_host_port(value.split("://", 1)[1])[1]
    except ValueError as e:
        problem = str(e)
    else:
        if 0 < port < 65536:
            return
        problem = f"port {port} is not in 1..65535"
    raise OptionError(f"scheduler address {value!r} is not HOST:PORT ({problem}): give e.g. tcp://10.0.0.5:8786")


def parent_set_mass(value) -> float:
    x = _number(value, "parent-set mass")
    if not 0 < x <= 1:
        raise OptionError(f"parent-set mass must be in (0, 1], got {value!r}")
    return x


def path_text(value, what: str) -> str:
    """``os.fspath(value)`` of a path a caller gives; OptionError (one line) for one holding
    a NUL character, which every file function refuses with a ValueError traceback."""
    text = os.fspath(value)
    if "\0" in str(text):
        raise OptionError(f"{what} {str(text)!r}: a path cannot hold a NUL character")
    return text


def workdir(value) -> str | None:
    """A work directory name (None: a temporary one)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise OptionError(f"workdir must be a path, got {type(value).__name__}")
    if not str(os.fspath(value)).strip():
        raise OptionError("empty work directory name (an unset variable?); give --workdir DIR")
    return path_text(value, "work directory")


def output_file(out, what: str, inputs=(), workdir=None, own=()) -> None:
    """OptionError (one line, before anything is read or written) if the file ``out``
    that a command is asked to write would destroy what it reads or the run it reads:

    - ``out`` is one of ``inputs`` (the data, an edges or truth file the command reads;
      None entries skipped), by path or as the same file under another name (a link);
    - ``out`` lies in the work directory ``workdir`` and is one of the run's own files:
      a name the run and its commands write at its top (run.json, lock, journal*.jsonl,
      `bigbn.store.workdir.OUTPUTS`: summary.json, edges.csv, ...; those named in ``own``,
      the command's own default outputs such as network.bif, excepted), a dot file, or
      any path in one of its folders (tables.zarr, samples-*, effects-*, dot folders).
      Any other file there, or in a folder of the user's own, may be written, and
      written again (a report, a picture, `roc --curve RUN/roc.csv`).

    Each was written over without a word: `bigbn scores DATA -o DATA` replaced the data
    with the score file, `bigbn export RUN -o RUN/summary.json` and `bigbn report RUN -o
    RUN/edges.csv` broke the finished run (the next command called it damaged), `bigbn
    roc EDGES TRUTH --curve TRUTH` replaced the truth. Also refused: a path holding a NUL
    (`path_text`) and one in a folder that does not exist (`parent_folder`; bigbn makes no
    folders above what it writes). ``what``: the option's name in the message (e.g.
    "--out"). A new file of another name in the workdir is allowed."""
    if out is None:
        return
    if not isinstance(out, (str, os.PathLike)):  # export(out=5): os.fspath's TypeError
        raise OptionError(f"{what} must be a file path, got {type(out).__name__}")
    path_text(out, what)
    parent_folder(out, what)
    path = os.path.abspath(os.fspath(out))
    for source in inputs:
        if source is None:
            continue
        source = os.path.abspath(os.fspath(source))
        same = path == source
        if not same and os.path.exists(path) and os.path.exists(source):
            try:
                same = os.path.samefile(path, source)
            except OSError:
                same = False
        if same:
            raise OptionError(f"{what} {out} is a file this command reads ({source}): writing it would "
                              "destroy it; give another file name")
    if workdir is None:
        return
    root = os.path.realpath(os.fspath(workdir))
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root or real == root:
        return
    from fnmatch import fnmatch

    from bigbn.store.workdir import EFFECTS_GLOB, JOURNAL_GLOB, LOCK, OUTPUTS, RUN_JSON, SAMPLES_GLOB, TABLES

    inside = os.path.relpath(real, root)
    first = inside.split(os.sep)[0]
    # the names a run and its commands write (not every .csv or .json: a file the user's
    # own command wrote there before, as `roc --curve RUN/roc.csv`, may be written again)
    if os.sep in inside:  # a path in a folder: the run's folders only
        theirs = first == TABLES or fnmatch(first, SAMPLES_GLOB) or fnmatch(first, EFFECTS_GLOB) \
            or first.startswith(".")
    else:
        theirs = (inside in (RUN_JSON, LOCK) or fnmatch(inside, JOURNAL_GLOB) or inside.startswith(".")
                  or inside in OUTPUTS) and inside not in own
    if theirs:
        raise OptionError(f"{what} {out} is a file of the run in {workdir}: writing it would damage the run; "
                          "give a file outside the work directory (or a new name)")


def open_output(path, mode: str = "w", **kwargs):
    """``open(path, mode)`` ("w" or "wb") for a file a command writes where the user says.
    A named pipe that no process reads is an OptionError (one line): open() waited for a
    reader, forever (`roc --curve FIFO`, `simulate --force FIFO`). A pipe that is read is
    written as any file (`--curve /dev/stdout | ...`)."""
    import errno

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OptionError(f"{os.fspath(path)}: a named pipe that nothing reads (start the reader first, "
                              "or give a file)") from None
        raise
    os.set_blocking(fd, True)
    return os.fdopen(fd, mode, **kwargs)


def parent_folder(out, what: str) -> None:
    """OptionError (one line) if the folder that is to hold ``out`` (a file or a folder a
    command writes) does not exist or is no folder: bigbn makes no folders above what it
    is asked to write (`bigbn study a/b/OUT` made a/ and a/b/ for a mistyped path; `bigbn
    roc --plot a/roc.png` printed the AUC, then failed)."""
    parent = os.path.dirname(os.path.abspath(os.fspath(out)))
    if not os.path.isdir(parent):
        problem = "is not a folder" if os.path.exists(parent) else "does not exist"
        raise OptionError(f"{what} {os.fspath(out)}: the folder {parent} {problem}; create it first "
                          "(bigbn makes no folders above what it writes)")


def flag(value, what: str) -> bool:
    if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
        raise OptionError(f"{what} must be True or False, got {value!r}")
    return bool(value)


def threshold(value, what: str = "threshold") -> float:
    """A posterior threshold: a real number in [0, 1] (a bool, text, NaN or an int beyond
    float64 is refused; NaN drew no arc, silently, and 1.5 or -1 were taken as they came)."""
    x = _number(value, what)
    if not 0.0 <= x <= 1.0:
        raise OptionError(f"{what} must be in [0, 1], got {value!r}")
    return x


def top(value, what: str = "top") -> int | None:
    """How many of a ranked list to return: None (all) or an integer ≥ 0 (a negative one
    cut the list's tail as a slice does, silently; 1.5 or '2' were TypeError tracebacks)."""
    if value is None:
        return None
    t = _integer(value, what)
    if t < 0:
        raise OptionError(f"{what} must be ≥ 0 (or None for all), got {value!r}")
    return t


def samples(value, what: str = "samples") -> int:
    T = _integer(value, what)
    if not 1 <= T <= MAX_SAMPLES:
        raise OptionError(f"{what} must be between 1 and {MAX_SAMPLES}, got {value}")
    return T


def seed(value, what: str = "seed") -> int:
    s = _integer(value, what)
    if not 0 <= s < 2**63:
        raise OptionError(f"{what} must be between 0 and 2^63 - 1, got {value}")
    return s


def sep(value) -> str | None:
    """The CSV separator: None (detected) or text; its length and characters are checked
    where the file is read (`bigbn.io.data`)."""
    if value is not None and not isinstance(value, str):
        raise OptionError(f"separator {value!r}: give one character (',', ';', tab) or 'tab'")
    return value


PRIOR_KWARGS = ("forbid", "require", "edge_prob", "max_parents")


def prior_kwargs(value) -> dict:
    """The structure-prior constraints (`priors.log_prior` checks their values): a dict
    with keys among PRIOR_KWARGS; forbid and require are iterables of pairs."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OptionError(f"prior_kwargs must be a dict, got {type(value).__name__}")
    unknown = sorted(set(map(str, value)) - set(PRIOR_KWARGS))
    if unknown:
        raise OptionError(f"prior_kwargs: unknown key {unknown[0]!r} (known: {', '.join(PRIOR_KWARGS)})")
    out = dict(value)
    for key in ("forbid", "require"):
        if key in out:
            try:
                out[key] = list(out[key])
            except TypeError:
                raise OptionError(f"prior_kwargs[{key!r}] must be a list of (parent, child) index "
                                  f"pairs, got {out[key]!r}") from None
    return out


def columns(value, what: str = "columns") -> tuple[str, ...] | None:
    """Column names (the cg score's ``discrete=`` / ``continuous=``): None, a list of names,
    or text "A,B" (the CLI's form); each name non-empty, none twice."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.split(",")
    try:
        names = tuple(str(x).strip() for x in value)
    except TypeError:
        raise OptionError(f"{what} must be column names (a list, or text 'A,B'), got {value!r}") from None
    if not names or any(not x for x in names):
        raise OptionError(f"{what}: an empty column name in {value!r}")
    twice = [x for j, x in enumerate(names) if x in names[:j]]
    if twice:
        raise OptionError(f"{what}: column {twice[0]!r} is named twice")
    return names


# ---------------------------------------------------------------- messages for Python callers

#: Errors are written once, in the CLI's words; `python_spelling` says them to a caller of
#: `bigbn.learn` / `sample` / `effects` in theirs. Whole phrases first ...
_PHRASES = (
    ("run the same `bigbn run` command with --fresh", "call learn again with fresh=True"),
    ("run the `bigbn run` command again with --fresh", "call learn again with fresh=True"),
    ("run the same `bigbn run` command without --map-only", "call learn again with posterior=True"),
    ("run the same `bigbn run` command without --disk-budget", "call learn again without disk_budget"),
    ("run the same `bigbn run --map` command again", "call learn again with map_dag=True"),
    ("run the same `bigbn run` command again", "call learn again with the same arguments"),
    ("run the same command again", "call it again with the same arguments"),
    ("run `bigbn run` first", "call learn(..., workdir=...) first"),
    ("a --map-only run", "a MAP-only run, posterior=False,"),
)
#: ... then each flag outside `backticks` (a command quoted whole stays a command): a flag
#: alone, a flag with its value, or the keyword it is.
_ALONE = {"fresh": "fresh=True", "map-only": "posterior=False", "map": "map_dag=True",
          "processes": 'scheduler="processes"', "no-contemporaneous": "contemporaneous=False"}
_KEYWORDS = {"alpha": "alpha_mode", "forbid": "forbidden", "require": "required", "map": "map_dag",
             "samples": "samples", "intervention-column": "intervention_column", "sep": "sep",
             "series-column": "series"}
_VALUE = r"\d[\w.]*|bge|bdeu|k2|auto|recompute|store|threads|sync|dask|processes"
_FLAG = re.compile(r"(`[^`]*`)|--([a-z][a-z-]*)(?: (" + _VALUE + r")\b)?")


def python_spelling(message: str) -> str:
    """``message`` (an error worded for the command line) as a Python caller would act on
    it: "use --fresh" → "use fresh=True", "--score bge" → 'score="bge"', "--chunk-bits 8"
    → "chunk_bits=8", "run the same `bigbn run` command again" → "call learn again with
    the same arguments"; a command quoted in backticks is left as it is."""
    for cli, py in _PHRASES:
        message = message.replace(cli, py)
    # "ess (--ess) is a parameter ...": the keyword alone
    message = re.sub(r"\b([a-z_]+) \(--([a-z-]+)\)",
                     lambda m: m.group(1) if m.group(2).replace("-", "_") == m.group(1) else m.group(0), message)

    def spell(m: re.Match) -> str:
        if m.group(1):
            return m.group(1)
        flag, value = m.group(2), m.group(3)
        name = _KEYWORDS.get(flag, flag.replace("-", "_"))
        if value is not None:
            return f"{name}={value if value.isdigit() else repr(value).replace(chr(39), chr(34))}"
        return _ALONE.get(flag, f"{name}=")

    return _FLAG.sub(spell, message)
