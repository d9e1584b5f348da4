"""A run directory read as data: what was asked (``run.json``) and what a finished run holds.

- `RunRecord`: the frozen record of one run: its fingerprint (everything that decides a
  number it stores: the data's content hash, n, m, the numerics version and the model
  options), the data's source and names, and the run's plan, one form for every run
  (`tiers.RunPlan`: one or more tiers with their chunk bits, the alpha mode, which
  stages: posterior, MAP; a run without tiers is one tier). ``run.json`` is written
  (`write_record`) and read (`read_record`) here and nowhere else; a run.json of format
  version 1 (a run without tiers recorded as its plain `Plan`) reads as its one tier.
- `check_is_ours`: a folder is bigbn's only when it is empty or holds a ``run.json`` that
  bigbn wrote (it carries ``"format": "bigbn-run"`` and a format version); anything else is
  refused before a single file in it is touched.
- `RunDir`: an existing work directory (its record, plan and journal), for `bigbn status`.
- `FinishedRun`: a finished run's results, with or without tiers, as a list of tiers
  (`FinishedTier`: layout, family β, its checked lattice `FinishedLattice` with γ and
  CRC-checked chunk reads, log Z); a run without tiers is the one tier of every variable
  on the root-scope lattice. Names, log p(x), the edge posteriors. Every problem is a `WorkdirError` naming the
  file and saying what to do. A feature computed from a finished run (sampling, causal
  effects) opens one of these and needs nothing private of any other module.

Adding a field to a run (see also docs/design.md, "The run record"):
- a model option that changes the numbers (e.g. tiers, interventions): add it to the
  ``options`` dict that `learn` passes to `fingerprint`; it is stored in run.json, compared
  on resume (a record without it reads as None) and shown by `bigbn status`;
- a field of the plan: add it to `tiers.RunPlan` (a JSON value) and to its ``to_json`` /
  ``from_json``, a record without it read at its default.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bigbn.plan import tiers as tiering
from bigbn._version import NUMERICS_VERSION, __version__
from bigbn.errors import WorkdirError
from bigbn.knowledge import Knowledge
from bigbn.plan.lattice import STAGES, Plan, fs_block, task_id
from bigbn.store.workdir import LOCK, RUN_JSON, Layout, Workdir, checksum, plain_layout, planned, read_file

RUN_FORMAT = "bigbn-run"
#: 2: the plan is a `tiers.RunPlan` (one or more tiers) for every run. Version 1 (up to
#: e83beef) recorded a run without tiers as its plain `Plan`; it is read as its one tier.
RUN_FORMAT_VERSION = 2
READ_FORMAT_VERSIONS = (1, 2)

def numerics_fingerprint() -> int:
    """The numerics version of this code (`bigbn._version.NUMERICS_VERSION`, bumped by hand
    whenever a stored number changes; tests/test_numerics.py checks it): part of the run
    fingerprint, so a workdir is never resumed by code that computes differently, and
    resumes after a change of anything else (orchestration, comments). The score's own
    version enters it as "score_numerics" (`bigbn.scores.base.numerics_version`)."""
    return NUMERICS_VERSION


#: The fingerprints of bcf7076, the last commit that hashed the numerical code's sources
#: (#38), as the numerics versions they are (its journal numbers are those of
#: tests/golden_numerics.json): its workdirs read as of these versions and resume. Any
#: other hash is another bigbn's, and its workdir is refused.
LEGACY_NUMERICS = {"76440e467093c924": 1}
LEGACY_SCORE_NUMERICS = {"d9af01c7347a91fb": "bdeu-1", "1aad660f67c833fe": "k2-1",
                         "df457e0e2490d042": "bge-1", "9f26e8a12a810a2d": "jkl-1"}


def _legacy(fp: dict) -> dict:
    """A fingerprint with bcf7076's source hashes as the versions they are."""
    numerics, score = fp.get("numerics"), fp.get("score_numerics")
    if isinstance(numerics, str) and numerics in LEGACY_NUMERICS:
        fp = {**fp, "numerics": LEGACY_NUMERICS[numerics]}
        if isinstance(score, str) and score in LEGACY_SCORE_NUMERICS:
            fp["score_numerics"] = LEGACY_SCORE_NUMERICS[score]
    return fp


def jsonable(obj):
    """obj with tuples as lists, sets sorted, numpy scalars and arrays as Python values and
    non-finite floats as strings: what run.json and summary.json can hold."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in sorted(obj.items())}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in (sorted(obj) if isinstance(obj, (set, frozenset)) else obj)]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (np.integer, np.floating)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def fingerprint(data_sha256: str, n: int, m: int, options: dict) -> dict:
    """What decides every number a run stores: the data (content hash, shape), this
    code's numerics and the model ``options`` (score, its parameters, max parents, the
    structure prior, constraints, ...): a dict of JSON values, compared key by key."""
    return {"data_sha256": data_sha256, "n": int(n), "m": None if m is None else int(m),
            "numerics": numerics_fingerprint(), **jsonable(options)}


_PLAIN = {"data_sha256": "the data differ from the run's (content hash {old:.12} vs {new:.12})",
          "numerics": "the workdir was computed by another bigbn version (numerics version {old}, now {new})",
          "score_numerics": "the workdir was computed by other code of the score (its numerics {old}, now {new})",
          "m": "the data have {new} rows, the run's {old}",
          "n": "the data have {new} columns, the run's {old}"}


def gib(b: float) -> str:
    """A size in bytes as text: '512 B', '3.5 KiB', '12.0 MiB', '1.5 GiB'."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= size:
            if isinstance(b, int) and b >= 2**1000:  # a budget given as 400 digits: b / size overflows a float
                from decimal import Decimal

                return f"{Decimal(b) / size:.3E} {unit}"
            return f"{b / size:.1f} {unit}"
    return f"{int(b)} B"


#: Knowledge.to_dict's constraint fields (tiers are a fingerprint key of their own), in words
_KNOWN = (("forbidden", "forbidden edges"), ("required", "required edges"),
          ("edge_prob", "edge prior probabilities"), ("max_parents", "max parents per node"))


def _constraints_in_words(names, old_fp: dict, new_fp: dict, new_names) -> str | None:
    """How two fingerprints' "constraints" differ, by variable name (run.json keeps them as
    `log_prior`'s node indices, which a user never wrote): e.g. "forbidden edges: the
    workdir's run has asia -> tub, this run smoke -> lung", each by its own run's variables
    (``names``, ``new_names``). None when either does not read back with them (a damaged
    record: the caller then shows the raw values)."""
    try:
        old, new = (Knowledge.from_record(list(of), {"max_parents": fp.get("max_parents"),
                                                     "constraints": fp.get("constraints")}).to_dict()
                    for of, fp in ((names, old_fp), (new_names, new_fp)))
    except Exception:  # noqa: BLE001 - indices past these names, a damaged record: no words for it
        return None

    def said(field, value) -> str:
        if field == "max_parents":
            items = [f"{x}: {m}" for x, m in value.items()]
        elif field == "edge_prob":
            items = [f"{u} -> {v}: {p!r}" for u, v, p in value]
        else:
            items = [f"{u} -> {v}" for u, v in value]
        return ", ".join(items[:6]) + (f" and {len(items) - 6} more" if len(items) > 6 else "") or "none"

    parts = [f"{words}: the workdir's run has {said(f, old[f])}, this run {said(f, new[f])}"
             for f, words in _KNOWN if old[f] != new[f]]
    return "; ".join(parts) or None


def _tiers_in_words(tiers) -> str:
    """A fingerprint's tiers (lists of names, or None) as text: "none" or "a, b | c | d"."""
    if not isinstance(tiers, list) or not all(isinstance(t, list) for t in tiers):
        return "none" if tiers is None else repr(tiers)
    return " | ".join(", ".join(map(str, t)) for t in tiers) or "none"


@dataclass(frozen=True)
class RunRecord:
    """What a run was asked and how it is planned: the content of ``run.json``.

    fingerprint: see `fingerprint`; plan: the run's `tiers.RunPlan`, one or more tiers (a
    run without tiers is one tier of every variable; its posterior / map_dag flags say
    every stage any invocation on this workdir has asked for); names: the data's
    variable names; source: the data file's absolute path, or "" / "array" for data in
    memory; version: the bigbn version that created the run; created: when.
    """

    fingerprint: dict
    plan: tiering.RunPlan
    names: tuple[str, ...]
    source: str = ""
    version: str = __version__
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S"))

    @property
    def children(self) -> int:
        """How many variables, the first ones, have their parents modelled: all of them, or a
        time series' variables of slice t (its lagged ones come after them)."""
        dynamic = self.fingerprint.get("dbn")
        return len(dynamic["nodes"]) if isinstance(dynamic, dict) and "nodes" in dynamic else len(self.names)

    @property
    def options(self) -> dict:
        """The model options (the fingerprint without data hash, shape and numerics)."""
        return {k: v for k, v in self.fingerprint.items() if k not in ("data_sha256", "n", "m", "numerics")}

    def differences(self, other: dict, names=None) -> list[str]:
        """How fingerprint ``other`` differs from this run's, in plain words (a key one of
        them lacks counts as None, so a record older than an option reads as without it).
        names: the variables of ``other``'s run, by which its constraints are said (None:
        this run's; indices into other columns would name the wrong variables)."""
        out = []
        for key in sorted(set(self.fingerprint) | set(other)):
            old, new = self.fingerprint.get(key), other.get(key)
            if key == "score_numerics" and self.fingerprint.get("score") != other.get("score"):
                continue  # another score has other numerics: not "other code of the score"
            if old != new:
                said = (_constraints_in_words(self.names, self.fingerprint, other,
                                              self.names if names is None else names) if key == "constraints"
                        else f"tiers: the workdir's run has {_tiers_in_words(old)}, this run {_tiers_in_words(new)}"
                        if key == "tiers" else None)
                out.append(_PLAIN[key].format(old=str(old), new=str(new)) if key in _PLAIN
                           else said or f"{key}: workdir has {old!r}, this run {new!r}")
        return out

    def with_stages(self, map_dag: bool, posterior: bool) -> RunRecord:
        """This record with the stages of another invocation added to the plan."""
        plan = dataclasses.replace(self.plan, map_dag=self.plan.map_dag or map_dag,
                                   posterior=self.plan.posterior or posterior)
        return dataclasses.replace(self, plan=plan)

    def to_json(self) -> dict:
        return {"format": RUN_FORMAT, "format_version": RUN_FORMAT_VERSION,
                "fingerprint": jsonable(self.fingerprint),
                "plan": self.plan.to_json(),
                "stages": list(STAGES), "names": list(self.names), "source": self.source,
                "version": self.version, "created": self.created}

    @classmethod
    def from_json(cls, obj: dict, path: Path) -> RunRecord:
        """The record in a parsed run.json that carries bigbn's format marker; WorkdirError
        if it is damaged."""
        damaged = f"{path} is damaged; use --fresh to start over (this removes the run's files)"
        if obj.get("format_version") not in READ_FORMAT_VERSIONS:
            raise WorkdirError(f"{path} has run format version {obj.get('format_version')!r}, this "
                               f"bigbn reads version {RUN_FORMAT_VERSION}; use --fresh to start over")
        try:
            fp, pl, names = obj["fingerprint"], obj["plan"], obj["names"]
            ok = isinstance(fp, dict) and isinstance(fp.get("data_sha256"), str) \
                and isinstance(fp.get("n"), int) and isinstance(fp.get("m", 0), (int, type(None))) \
                and isinstance(pl, dict) \
                and isinstance(names, list) and all(isinstance(s, str) for s in names)
            plan = tiering.RunPlan.from_json(pl) if ok else None
            source = obj.get("source") or ""
            ok = ok and plan.n == fp["n"] == len(names) == len(set(names)) and isinstance(source, str)
        except (KeyError, TypeError, ValueError, AttributeError):  # OptionError is a ValueError
            ok = False
        if not ok:
            raise WorkdirError(damaged)
        return cls(_legacy(fp), plan, tuple(names), source, str(obj.get("version", "")), str(obj.get("created", "")))


def _not_ours(path: Path, why: str) -> WorkdirError:
    return WorkdirError(f"{path} {why}, so {path.parent} is not a bigbn work directory (or its "
                        "run.json was damaged): bigbn leaves it untouched; give --workdir a new or "
                        "empty folder (or remove the folder yourself)")


def _marked(path: Path) -> dict | None:
    """run.json parsed, if it carries bigbn's format marker; None if there is none;
    WorkdirError if it is unreadable or not bigbn's."""
    try:
        raw = read_file(path, lambda p, kind: _not_ours(p, f"is {kind}"))  # a FIFO: one line, no wait
    except FileNotFoundError:
        return None
    except OSError as e:
        raise WorkdirError(f"{path}: cannot read ({e.strerror})") from None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _not_ours(path, "is not JSON text") from None
    if not (isinstance(obj, dict) and obj.get("format") == RUN_FORMAT):
        raise _not_ours(path, f"has no \"format\": \"{RUN_FORMAT}\" marker")
    return obj


def read_record(root: Path) -> RunRecord | None:
    """The run record of work directory ``root``; None when there is no run.json.
    WorkdirError when run.json is unreadable, was not written by bigbn, or is damaged."""
    path = Path(root) / RUN_JSON
    obj = _marked(path)
    return None if obj is None else RunRecord.from_json(obj, path)


def write_record(root: Path, record: RunRecord) -> None:
    """Replace run.json atomically (write a temporary file, fsync, rename)."""
    path = Path(root) / RUN_JSON
    write_json_atomic(path, record.to_json())


def write_json_atomic(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def check_is_ours(root: Path, fresh: bool = False) -> None:
    """Whether bigbn may write into ``root``: it does not exist, is empty (a ``lock`` file
    left by a refused run aside), or holds a run.json bigbn wrote (with ``fresh``, one
    whose content is damaged will do: it is removed). Anything else is somebody else's
    folder and raises WorkdirError before a single file in it is touched, with or without
    --fresh."""
    root = Path(root)
    if not root.exists():
        return None
    if not root.is_dir():
        raise WorkdirError(f"{root} is a file, not a folder; give --workdir a folder")
    try:
        entries = sorted(os.listdir(root))
    except OSError as e:
        raise WorkdirError(f"{root}: cannot list the folder ({e.strerror})") from None
    if RUN_JSON in entries:
        if not fresh:
            read_record(root)
        elif _marked(root / RUN_JSON) is None:
            raise _not_ours(root / RUN_JSON, "vanished")
        return
    # a lock left by a refused run, and the run.json.tmp of a new run killed before its
    # run.json was in place (`write_json_atomic`; every later command refused that folder)
    if all(e == LOCK and (root / e).is_file() or e == RUN_JSON + ".tmp" and _half_written(root / e)
           for e in entries):
        return
    shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
    raise WorkdirError(f"{root} is not empty and not a bigbn work directory (it holds {shown} "
                       "but no run.json that bigbn wrote); bigbn leaves it untouched: give "
                       "--workdir a new or empty folder")


def _half_written(path: Path) -> bool:
    """Whether ``path`` (a run.json.tmp) can be what `write_json_atomic` left when killed:
    a regular file (no link) of bigbn's JSON form begun or nothing yet, not much of it."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            return False
        head = read_file(path)[:5]
    except OSError:
        return False
    return b'{\n  "'.startswith(head)


# ---------------------------------------------------------------------------------- reading

def _unfinished(root, then: str) -> WorkdirError:
    return WorkdirError(f"{root}: the run is not finished; run the same `bigbn run` command "
                        f"again to finish it, then {then}")


def _damaged(path, then: str) -> WorkdirError:
    return WorkdirError(f"{path} is missing or damaged; run the same `bigbn run` command again to "
                        f"recompute it (or with --fresh to start over), then {then}")


class RunDir:
    """An existing bigbn work directory, read only: its record, plan and journal."""

    def __init__(self, workdir, then: str = "use it"):
        self.root = Path(workdir).resolve()
        self.then = then
        record = read_record(self.root) if self.root.is_dir() else None
        if record is None:
            what = "no run.json" if self.root.is_dir() else "a file, not a folder" if self.root.exists() \
                else "no such folder"
            raise WorkdirError(f"{self.root}: no finished run here (not a bigbn work directory: "
                               f"{what}); run `bigbn run` first, then {then}")
        self.record = record
        self.plan: tiering.RunPlan = record.plan
        self.workdir = Workdir(self.root)

    @property
    def names(self) -> tuple[str, ...]:
        return self.record.names

    def journal(self) -> dict[str, dict]:
        return self.workdir.journal()


def _check_numerics(rd: RunDir, then: str) -> None:
    if rd.record.fingerprint.get("numerics") != numerics_fingerprint():
        raise WorkdirError(f"{rd.root} was computed by another bigbn version (its numerical code "
                           f"differs); run the `bigbn run` command again with --fresh, then {then}")


def check_scores_sound(rd: RunDir, then: str) -> None:
    """WorkdirError when the run's scores came from code that gave wrong posteriors on some
    inputs and this run's may be one of them: a .jkl run of numerics jkl-1 (resumes refuse
    it by the fingerprint; a finished one is checked against its file,
    `bigbn.scores.jkl.jkl1_doubt`)."""
    fp = rd.record.fingerprint
    if fp.get("score") != "jkl" or fp.get("score_numerics") != "jkl-1":
        return
    from bigbn.scores.jkl import jkl1_doubt

    constrained = bool(fp.get("constraints")) or bool(fp.get("tiers"))
    # a shift is journaled by the scores task (log_offset, only where one was made)
    shifted = any(r.get("log_offset") for r in rd.journal().values() if r.get("stage") == "scores")
    why = jkl1_doubt(rd.record.source, str(fp.get("data_sha256")), int(fp.get("max_parents", 0)), constrained,
                     shifted)
    if why is not None:
        raise WorkdirError(f"{rd.root}: computed by the .jkl reader of an older bigbn (score numerics "
                           f"jkl-1), whose posteriors were wrong when a variable's largest score is of a "
                           f"parent set the run cannot use, and {why}; run the `bigbn run` command again "
                           f"with --fresh, then {then}")


def _check_tables_folder(rd: RunDir, then: str) -> None:
    rd.workdir.store.check_folder(f"run the same `bigbn run` command with --fresh to start over, "
                                  f"then {then}")


class FinishedLattice:
    """The checked tables of one finished lattice plan: a whole run's, or one tier's (its
    plan's scope names its tables' folder and prefixes its task ids).

    Opened checks: the final tasks are journaled and their outputs pass their CRC; β
    matches its journal CRC; the journaled log p(x) equals L(V) in the (CRC-checked)
    forward table. ``need``: "posterior", or "map" for the MAP network alone.
    """

    def __init__(self, workdir: Workdir, plan: Plan, records: dict, then: str, need: str = "posterior"):
        self.workdir, self.plan, self.records, self.then = workdir, plan, records, then
        root = workdir.root
        edges = records.get(_tid(plan, ("edges",)))
        map_rec = records.get(_tid(plan, ("map_dag",)))
        if need == "posterior" and edges is None and map_rec is not None:
            raise WorkdirError(f"{root} holds only the MAP network (a --map-only run); run the same "
                               f"`bigbn run` command without --map-only to add the posterior, then {then}")
        if (need == "posterior" and edges is None) or (need == "map" and map_rec is None):
            raise _unfinished(root, then)
        self.beta = self.read("beta")
        scores = records.get(_tid(plan, ("scores",)))
        if scores is None or scores["crc"] != checksum(self.beta):
            raise _damaged(workdir.tables / "beta", then)
        #: Σ_i c_i subtracted from β (bigbn/scores/offsets.py): log p(x) = log_px + log_offset
        self.log_offset = float(scores.get("log_offset", 0.0))
        stages = dict(map_dag=need == "map" or plan.map_dag and map_rec is not None,
                      posterior=need == "posterior")
        self.plan_read = dataclasses.replace(plan, **stages)
        for key, rec, on in ((("edges",), edges, stages["posterior"]), (("map_dag",), map_rec, stages["map_dag"])):
            spec = self.plan_read.task(key) if on else None
            if on and not workdir.intact(spec, rec):
                tables = " or ".join(str(workdir.tables / r.table) for r in spec.writes)
                raise _damaged(tables, then)
        self.log_px = None
        if stages["posterior"]:
            self.log_px = float(edges["log_px"])
            last = float(self.chunk("forward", plan.n_chunks - 1)[-1])
            if not math.isclose(last, self.log_px, rel_tol=1e-12, abs_tol=1e-9):
                raise WorkdirError(f"{workdir.journal_path}: the edges task's log p(x) = "
                                   f"{self.log_px!r} is not L(V) = {last!r} of the forward table "
                                   "(the journal was edited or damaged); run the same `bigbn run` "
                                   f"command again to recompute it, then {then}")

    def read(self, table: str, index=slice(None)) -> np.ndarray:
        """A table's values; WorkdirError naming the table when it is missing or damaged
        (unreadable, or its metadata not the shape, chunks and type the plan gives it)."""
        return _read_table(self.workdir, self.plan, table, index, self.then)

    def chunk(self, table: str, H: int) -> np.ndarray:
        """Chunk H of a chunk table (forward), checked against its task's journal CRC."""
        size = self.plan.chunk_size
        if table == "forward" and self.plan.kept is not None and H != self.plan.n_chunks - 1:
            raise WorkdirError(f"{self.workdir.root} was run with --disk-budget, which keeps L(V) alone of the "
                               f"forward table (chunk {H} is gone); {self.then} needs all of it: run the same "
                               "`bigbn run` command without --disk-budget in another workdir")
        try:
            data = self.workdir.read(table, slice(H * size, (H + 1) * size))
        except Exception:  # noqa: BLE001 - a truncated or unreadable chunk
            data = None
        rec = self.records.get(_tid(self.plan, (table, H)))
        if data is None or rec is None or rec["crc"] != checksum(data):
            raise WorkdirError(f"{self.workdir.tables / table}: chunk {H} is missing or damaged; run "
                               f"the same `bigbn run` command again to repair it, then {self.then}")
        return data

    def gamma(self) -> np.ndarray:
        """γ (n, F), written by the edges task (its CRC checked when the run was opened)."""
        return self.read("gamma")

    def posterior(self) -> np.ndarray:
        """The exact edge posteriors (n, n)."""
        return self.read("posterior")

    def map_parents(self) -> np.ndarray:
        return self.read("map_parents").astype(np.int64)

    @property
    def log_map_score(self) -> float:
        return float(self.records[_tid(self.plan, ("map_dag",))]["log_score"]) + self.log_offset


def kept_keys(plan: Plan) -> list[tuple]:
    """The tasks whose outputs a finished run keeps and later commands read: β, the edge
    posteriors and γ, the forward table (sampling), the MAP network."""
    keys = [("scores",)]
    if plan.posterior:  # a plan with a disk budget keeps L(V) alone
        keys += [("edges",)] + [("forward", H) for H in range(plan.n_chunks)
                                if plan.kept is None or H == plan.n_chunks - 1]
    return keys + ([("map_dag",)] if plan.map_dag else [])


def damaged_tables(rd: RunDir, done: dict) -> list[Path]:
    """The files of the tables a finished run's results are read from (by `bigbn sample`,
    `effects`, `bigbn.open`: the outputs of its journaled `kept_keys` tasks, and a tier's
    family β) that are missing, not regular files, or not of the size their table's
    metadata gives a chunk, and the metadata (zarr.json) of a table that is not of the
    plain form and shape its plan gives it. By ``os.stat`` alone: this reads no table
    data, so `bigbn status` stays cheap at any n (the CRCs are checked when a command
    reads the tables). ``done``: the journal's records."""
    out: list[Path] = []
    layouts: dict[Path, Layout | None] = {}

    def check(meta: Path, lay: Layout | None, coords) -> None:
        if lay is None:
            out.append(meta)
            return
        size = math.prod(lay.chunks) * lay.dtype.itemsize
        for cc in coords:
            f = meta.parent / lay.key(cc)
            try:
                st = os.stat(f)
            except OSError:
                out.append(f)
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                out.append(f)

    for j, _, plans in _lattice_plans(rd):
        for plan in plans:
            tables = Workdir(rd.root, scope=plan.scope).tables
            for key in kept_keys(plan):
                if _tid(plan, key) not in done:
                    continue
                for region in plan.task(key).writes:
                    meta = tables / region.table / "zarr.json"
                    if meta not in layouts:  # once a table: the forward table has a task per chunk
                        lay = layouts[meta] = _layout(meta)
                        if lay is not None and (lay.shape, lay.chunks, lay.dtype) != planned(plan, region.table):
                            layouts[meta] = None
                    check(meta, layouts[meta], region.chunks)
    if rd.plan.tiered:
        fp = rd.record.fingerprint
        for lay in tiering.layouts(Knowledge(tiers=fp["tiers"]).tier_ids(rd.names), fp["max_parents"]):
            if tiering.family_beta_id(lay) in done:
                meta = Workdir(rd.root, scope=lay.scope).tables / tiering.FAMILY_BETA / "zarr.json"
                table = _layout(meta)
                check(meta, table, [] if table is None else
                      np.ndindex(*(-(-x // c) for x, c in zip(table.shape, table.chunks))))
    return list(dict.fromkeys(out))


def _layout(meta: Path) -> Layout | None:
    try:
        return plain_layout(meta)
    except WorkdirError:  # a FIFO or a folder of its name
        return None


def _tid(plan: Plan, key: tuple) -> str:
    """The journal id of task ``key`` of ``plan`` (after its scope), whether or not the plan
    as read has that stage."""
    return f"{plan.scope}/{task_id(key)}" if plan.scope else task_id(key)


def _read_table(workdir: Workdir, plan: Plan, table: str, index, then: str) -> np.ndarray:
    try:
        out = workdir.read(table, index) if workdir.store.readable(plan, table) else None
    except Exception:  # noqa: BLE001 - zarr raises many kinds on damaged chunks
        out = None
    if out is None:
        raise _damaged(workdir.tables / table, then)
    return out


@dataclass(frozen=True)
class FinishedTier:
    """One tier of a finished run: its layout, the β of its nodes' families in that layout
    (m, width), its lattice (None for a one-node tier), log Z_j (None for a MAP-only run)
    and log_offset: Σ_v c_v subtracted from β (bigbn/scores/offsets.py). A run without tiers is
    one tier of every variable with no earlier tiers: its lattice is the root-scope one and
    β the plain β (its layout is the plan's family order)."""

    lay: tiering.TierLayout
    beta: np.ndarray = field(repr=False)
    lattice: FinishedLattice | None = field(repr=False)
    log_z: float | None
    log_offset: float = 0.0

    def gamma(self) -> np.ndarray:
        """The tier's γ (m, F_t), read from its lattice (CRC-checked when it was opened)."""
        return self.lattice.gamma() if self.lattice is not None else np.zeros((1, 1))

    def family_posteriors(self) -> np.ndarray:
        """p(G_v = G | x) of every column of every node of the tier (m, width)."""
        return tiering.family_posteriors(self.beta, self.gamma(), self.lay, self.log_z)


class FinishedRun(RunDir):
    """The results of a finished run, with or without tiers, as a list of tiers
    (`FinishedTier`, earliest first; ``lays`` their layouts): a run without tiers is one
    tier whose lattice is the root-scope lattice (`FinishedLattice`, the tables at the
    workdir's root) and whose β is the plain β; ``tiered`` says whether run.json has tiers.
    log_px = Σ_j log Z_j, log_offset = Σ_j c_j (log p(x) = log_px + log_offset).

    Checks: run.json is bigbn's and computed by this code's numerics; every lattice passes
    `FinishedLattice`'s checks; a tier's family β passes its journal CRC and its lattice's
    scores are exactly that β's segment sums, so the two never come from different runs.
    ``need``: "posterior", or "map" for the MAP network alone (a run without tiers)."""

    def __init__(self, workdir, then: str = "sample", need: str = "posterior"):
        RunDir.__init__(self, workdir, then)
        _check_numerics(self, then)
        check_scores_sound(self, then)
        _check_tables_folder(self, then)
        self.records = self.journal()
        pl = self.plan
        if pl.tiered:
            self.tiers = self._tiers(pl, then, need)
            self.lays = tuple(t.lay for t in self.tiers)
            self.log_px = float(sum(t.log_z for t in self.tiers))
            #: Σ_v c_v subtracted from β (bigbn/scores/offsets.py): log p(x) = log_px + log_offset
            self.log_offset = float(sum(t.log_offset for t in self.tiers))
        else:
            post, mp = pl.lattices(0)  # one plan (every stage asked), at the workdir's root
            lattice = FinishedLattice(self.workdir, post or mp, self.records, then, need)
            self.lays = (tiering.TierLayout(0, tuple(range(pl.n)), (), pl.k),)
            self.tiers = [FinishedTier(self.lays[0], lattice.beta, lattice, lattice.log_px, lattice.log_offset)]
            self.log_px, self.log_offset = lattice.log_px, lattice.log_offset

    @property
    def tiered(self) -> bool:
        """Whether the run has tiers (run.json's plan lists them), not one root-scope lattice."""
        return self.plan.tiered

    def _tiers(self, pl: tiering.RunPlan, then: str, need: str) -> list[FinishedTier]:
        root = self.root
        if need != "posterior":  # the tiers' MAP lattices hold within-tier parents only
            raise WorkdirError(f"{root}: a run with tiers is read for its posterior; its MAP network "
                               f"is {root / 'map_dag.csv'}")
        if not pl.posterior:
            raise WorkdirError(f"{root} holds only the MAP network (a --map-only run); run the same "
                               f"`bigbn run` command without --map-only to add the posterior, then {then}")
        fp = self.record.fingerprint
        lays = tiering.layouts(Knowledge(tiers=fp["tiers"]).tier_ids(self.names), fp["max_parents"])
        out = []
        for lay, (plan, _) in zip(lays, pl.plans()):
            beta = self._family_beta(lay)
            offset = float(self.records[tiering.family_beta_id(lay)].get("log_offset", 0.0))
            A, _ = tiering.tier_local_scores(beta, lay)
            if plan is None:  # one node: no lattice
                out.append(FinishedTier(lay, beta, None, float(A[0, 0]), offset))
                continue
            lattice = FinishedLattice(Workdir(root, scope=lay.scope), plan, self.records, then)
            if not np.array_equal(lattice.beta, A):
                raise WorkdirError(f"{lattice.workdir.tables / 'beta'}: tier {lay.index + 1}'s scores are "
                                   f"not the sums of its family scores; run the same `bigbn run` command "
                                   f"with --fresh, then {then}")
            out.append(FinishedTier(lay, beta, lattice, lattice.log_px, offset))
        return out

    def _family_beta(self, lay) -> np.ndarray:
        wd = Workdir(self.root, scope=lay.scope)
        rec = self.records.get(tiering.family_beta_id(lay))
        if rec is None:  # the tier's family β is journaled when its lattice is done
            raise _unfinished(self.root, self.then)
        try:
            beta = wd.read(tiering.FAMILY_BETA, slice(None))
        except Exception:  # noqa: BLE001 - missing or damaged
            beta = None
        if beta is None or beta.shape != (lay.m, lay.width) or rec["crc"] != checksum(beta):
            raise _damaged(wd.tables / tiering.FAMILY_BETA, self.then)
        return beta

    def families(self) -> tiering.TieredFamilies:
        """Every node's parent-set posteriors, in its tier's layout."""
        return tiering.TieredFamilies(self.lays, [t.family_posteriors() for t in self.tiers])

    def posterior(self) -> np.ndarray:
        """The exact edge posteriors (n, n): a run without tiers reads its posterior table;
        with tiers, they come from each tier's family posteriors."""
        if not self.tiered:
            return self.tiers[0].lattice.posterior()
        n = len(self.names)
        out = np.zeros((n, n))
        for lay, post in zip(self.lays, self.families().posts):
            out[:, list(lay.nodes)] = tiering.edge_posteriors_from(post, lay, n)
        return out


def finished_run(workdir, then: str = "sample"):
    """A finished run's results (`FinishedRun`, with or without tiers).
    A run not finished, or whose tables fail their checks, while another process holds the
    workdir's lock (a `bigbn run` computing them) is a WorkdirError saying it is running."""
    try:
        return FinishedRun(workdir, then)
    except WorkdirError:
        root = Path(workdir).resolve()
        try:
            holder = Workdir(root).active_holder() if root.is_dir() else None
        except (OSError, WorkdirError):  # a FIFO of the lock's name: the first error stands
            holder = None
        if holder is not None:
            raise WorkdirError(f"{root}: the run is still running (pid {holder.get('pid')} on "
                               f"{holder.get('host')} holds the workdir's lock); wait for it to "
                               f"finish, then {then}") from None
        raise


def status_lines(workdir) -> list[str]:
    """Human-readable lines describing a work directory (for `bigbn status`), with or
    without tiers: a run without tiers is one tier on the root-scope lattice, shown stage
    by stage; with tiers, a line per tier."""
    rd = RunDir(workdir, then="ask for its status")
    root, wd, pl, fp = rd.root, rd.workdir, rd.plan, rd.record.fingerprint
    tiered = pl.tiered
    done = rd.journal()
    computes = "computes " + " and ".join(w for w, on in (("the posterior", pl.posterior),
                                                          ("the MAP network", pl.map_dag)) if on)
    lines = [f"workdir {root}",
             f"data: {rd.record.source or '(in memory)'}  sha256 {fp['data_sha256'][:16]}…  "
             f"n = {fp['n']}, m = {fp['m']}",
             "options: " + ", ".join(f"{k} {v}" for k, v in rd.record.options.items()
                                     if v not in (None, {}, []) and k not in ("constraints", "tiers")),
             *_knowledge_lines(rd)]
    if tiered:
        sizes = [len(t) for t in fp.get("tiers") or []]
        lines.append(f"tiers: {len(sizes)} (sizes {', '.join(map(str, sizes))}); only tier-consistent "
                     f"orders; {computes}")
    else:
        lattice = pl.distinct()[0]
        again = len(pl.kept or ()) and lattice.h + 1 - len(pl.kept)
        budget = "" if pl.kept is None else (  # a disk budget's plan was shown as one without
            f", under a disk budget: L kept at levels {', '.join(map(str, pl.kept))} of 0–{lattice.h}, "
            + (f"{again} level{'s' * (again != 1)} computed again" if again else "each deleted after its last reader")
            + " (the run cannot be sampled)")
        lines.append(f"plan: chunk bits {lattice.chunk_bits}, {lattice.n_chunks} chunks, alpha {pl.alpha_mode}, "
                     f"{computes}{budget}")
    finished = {"posterior": True, "map": True}
    bound, block = 0, fs_block(root)
    for j, m, plans in _lattice_plans(rd):
        if not plans:
            lines.append(f"  tier {j + 1}: 1 node, no lattice")
            continue
        n_done = n_tasks = 0
        for plan in plans:
            bound += sum(plan.disk_bytes(None, block).values())
            for stage in STAGES:
                keys = plan.stage_tasks(stage)
                if not keys:
                    continue
                ids = [_tid(plan, key) for key in keys]
                d = sum(1 for t in ids if t in done)
                finished["map" if stage.startswith("map") else "posterior"] &= d == len(keys)
                n_done, n_tasks = n_done + d, n_tasks + len(keys)
                if not tiered:
                    secs = sum(done[t].get("seconds", 0) for t in ids if t in done)
                    lines.append(f"  {stage:>8}: {d}/{len(keys)} tasks done ({secs:.1f} task-seconds)")
        if tiered:
            lines.append(f"  tier {j + 1}: {m} nodes, {n_done}/{n_tasks} tasks done")
    used = sum(f.stat().st_blocks * 512 for f in root.rglob("*") if f.is_file())
    # disk_bytes() bounds the tables for tasks run in any order (status does not know the
    # run's workers); a local run's peak is lower (`bigbn plan` gives both)
    lines.append(f"disk used: {gib(used)} (the plan's tables: at most {gib(bound)})")
    holder = wd.active_holder()
    lines.append(f"active: yes (pid {holder.get('pid')} on {holder.get('host')})" if holder is not None
                 else "active: no")
    map_done = pl.map_dag and finished["map"] and (root / "map_dag.csv").exists()
    posterior_done = pl.posterior and finished["posterior"] and (root / "edges.csv").exists()
    # the journal says finished; a table file deleted or truncated since would be found only
    # by the next command that reads the tables: a stat of each (no table data read) says it now
    bad = damaged_tables(rd, done) if posterior_done or map_done else []
    if bad:
        more = f" (and {len(bad) - 1} more file{'s' * (len(bad) > 2)})" if len(bad) > 1 else ""
        lines.append(f"finished, but its tables are damaged: {bad[0]} is missing or not of its size{more}; run "
                     "the same `bigbn run` command again to recompute them (`bigbn report` reads the results "
                     "files alone; `bigbn sample`, `effects`, `export` and `bigbn.open` read the tables)")
    if posterior_done:
        lines.append(f"finished: results in {root / 'edges.csv'}")
        if map_done:
            lines.append(f"MAP network: {root / 'map_dag.csv'}")
        elif pl.map_dag:
            lines.append("MAP network unfinished: run the same `bigbn run --map` command again")
    elif map_done:
        lines.append(f"MAP network finished: {root / 'map_dag.csv'}" + (
            "; the posterior is not (a --map-only run: the same command without --map-only adds it)"
            if not pl.posterior else "; the posterior is not: run the same command again"))
    else:
        lines.append("unfinished: run the same `bigbn run` command again to resume")
    return lines


def _lattice_plans(rd: RunDir) -> list[tuple[int, int, list[Plan]]]:
    """Per tier (earliest first): its index, its number of nodes and the plans of its
    lattices (none for a one-node tier; `tiers.RunPlan.lattices`: the run without tiers has
    one plan for every stage, at the root scope)."""
    pl = rd.plan
    return [(j, m, list({id(p): p for p in pl.lattices(j) if p is not None}.values()))
            for j, (m, _) in enumerate(pl.tiers)]


def _knowledge_lines(rd: RunDir) -> list[str]:
    """The run's knowledge by name (`bigbn.knowledge.Knowledge`), a line per part."""
    lines = Knowledge.from_record(rd.names, rd.record.fingerprint).lines()
    return ["knowledge: " + lines[0], *("           " + x for x in lines[1:])] if lines else []
