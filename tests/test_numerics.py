"""Golden journal checksums: the numbers of a few small runs, under this numerics version.

A run's fingerprint holds a hand-bumped numerics version (`bigbn._version.NUMERICS_VERSION`,
and each built-in score's `numerics`), not a hash of the sources, so that a workdir
resumes after a change of orchestration, comments or layout. What keeps the version
honest is this file: every journal record of a few small runs (the CRC-32C of every
task's output, log p(x), the offsets) must equal the golden value committed in
tests/golden_numerics.json for this version. A change of any number fails here, and the
message says what to bump and how to regenerate the values:

    PYTHONPATH=. python tests/test_numerics.py --write

The script refuses to replace the values of a version that already has other ones (bump
first). The golden values are written with one worker and checked with two, so they also
show that a run's numbers do not depend on the number of workers. They are a machine's:
on another architecture, or without fused multiply-add, the test is skipped (the last bits
of the same code's numbers may differ there; so may another libm's log-gamma). The cases cover every
stage (scores, forward, backward, gamma, edges, release, MAP, alpha stored), several chunks
of each (small chunk bits), discrete and continuous scores, a structure prior with
constraints, tiers, interventions and scores from a .jkl file (with an offset).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

import bigbn
from bigbn._version import NUMERICS_VERSION
from bigbn.errors import BigBNWarning
from bigbn.kernels.families import family_masks, unsqueeze
from bigbn.scores.jkl import FileScore
from bigbn.scores.base import BUILTIN, numerics_version
from bigbn.store.workdir import Workdir

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
GOLDEN = HERE / "golden_numerics.json"
REGENERATE = "PYTHONPATH=. python tests/test_numerics.py --write"
#: journal fields that are not numbers of the run (when, how long, which process)
NOT_NUMBERS = ("task", "stage", "seconds", "start", "end", "pid")


def _jkl(path: Path) -> Path:
    """A .jkl file of 6 variables, every family of at most 2 parents, scores from a fixed
    formula around -1e6 (so the run subtracts an offset)."""
    names = [f"v{i}" for i in range(6)]
    lines = [str(len(names))]
    masks = family_masks(5, 2).tolist()
    for i, name in enumerate(names):
        lines.append(f"{name} {len(masks)}")
        for f, sq in enumerate(masks):
            g = unsqueeze(sq, i)
            ps = [names[b] for b in range(6) if g >> b & 1]
            score = -1e6 - ((7 * i + 13 * f) % 19) / 4 - 1.5 * len(ps)
            lines.append(" ".join([repr(score), str(len(ps)), *ps]))
    path.write_text("\n".join(lines) + "\n")
    return path


#: name: (score of the run, learn keywords); paths relative to examples/, "jkl" a file above
CASES = {
    "asia-bdeu": ("bdeu", dict(data="asia.csv", max_parents=2, chunk_bits=4)),
    "asia-k2-store-map": ("k2", dict(data="asia.csv", score="k2", max_parents=3, chunk_bits=4,
                                     alpha_mode="store", map_dag=True, structure_prior="uniform")),
    "asia-map-only-constraints": ("bdeu", dict(data="asia.csv", ess=2.5, max_parents=2, chunk_bits=3,
                                               map_dag=True, posterior=False,
                                               prior_kwargs={"forbid": [(0, 1)], "require": [(2, 5)]})),
    "asia-tiers": ("bdeu", dict(data="asia.csv", max_parents=2, chunk_bits=2, map_dag=True,
                                tiers={"asia": 1, "smoke": 1, "tub": 2, "lung": 2, "bronc": 2,
                                       "either": 3, "xray": 4, "dysp": 4})),
    "sachs-bge": ("bge", dict(data="sachs.csv", max_parents=2, chunk_bits=6, map_dag=True)),
    "sachs-interventional-bge": ("bge", dict(data="sachs_interventional.csv", max_parents=1, chunk_bits=6,
                                             intervention_column="targets")),
    "jkl": ("jkl", dict(scores="jkl", max_parents=2, chunk_bits=3, map_dag=True)),
    "anes96-cg": ("cg", dict(data="anes96.csv", max_parents=2, chunk_bits=5, map_dag=True)),
}


def _score_version(score: str) -> str:
    return numerics_version(FileScore() if score == "jkl" else BUILTIN[score])


def journal_numbers(case: str, root: Path, workers: int) -> dict:
    """{task: its journal record's numbers} of a fresh run of ``case`` in ``root``."""
    score, kw = CASES[case]
    kw = dict(kw)
    if "data" in kw:
        kw["data"] = EXAMPLES / kw["data"]
    else:
        kw["scores"] = _jkl(root / "scores.jkl")
    with warnings.catch_warnings():  # the Sachs intensities are far from unit scale (BGe warns): numbers only here
        warnings.simplefilter("ignore", BigBNWarning)
        bigbn.learn(**kw, workdir=root / "w", workers=workers, fresh=True)
    return {task: {k: v for k, v in sorted(rec.items()) if k not in NOT_NUMBERS}
            for task, rec in sorted(Workdir(root / "w").journal().items())}


def machine() -> str:
    """What decides the last bits of the same code's numbers besides the code: the CPU
    architecture and whether numba may contract a·b + c into one fused multiply-add (the
    libm's log-gamma too, named in the failure message)."""
    import platform

    from llvmlite import binding

    fma = binding.get_host_cpu_features().get("fma") or platform.machine() in ("arm64", "aarch64")
    return f"{platform.machine()} {'fma' if fma else 'no-fma'}"


def _platform() -> str:
    import platform

    import numba

    return f"{platform.system()} {' '.join(platform.libc_ver())} numba {numba.__version__}"


def golden() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_numbers_are_those_of_this_numerics_version(case, tmp_path):
    gold = golden()
    score = CASES[case][0]
    version = _score_version(score)
    assert gold.get("numerics_version") == NUMERICS_VERSION, (
        f"{GOLDEN.name} holds the numbers of numerics version {gold.get('numerics_version')}, this "
        f"code has NUMERICS_VERSION = {NUMERICS_VERSION}: regenerate them with `{REGENERATE}`")
    if gold.get("machine") != machine():
        pytest.skip(f"{GOLDEN.name} holds the numbers of a {gold.get('machine')} machine, this is {machine()}")
    want = gold["cases"].get(case)
    assert want is not None and want["score_numerics"] == version, (
        f"{GOLDEN.name} has no numbers of case {case} under score version {version!r}: "
        f"regenerate them with `{REGENERATE}`")
    got = journal_numbers(case, tmp_path, workers=2)
    changed = sorted(set(got) ^ set(want["journal"]) | {t for t in got if got[t] != want["journal"].get(t)})
    assert not changed, (
        f"numbers changed in case {case} (tasks {', '.join(changed[:6])}{' ...' if len(changed) > 6 else ''}): "
        f"if intended, bump NUMERICS_VERSION in bigbn/_version.py (or, if only the {score} score's own "
        f"numbers changed, its `numerics` = {version!r}) so that no workdir of the old numbers "
        f"resumes under the new ones, then regenerate the golden values with `{REGENERATE}`; "
        f"if not intended, the change has a bug (or this machine's libm differs from that of the "
        f"machine that wrote them: {gold.get('platform')}, this one {_platform()})")


def write() -> int:
    """Compute every case (one worker) and write the golden file, unless this numerics
    version (or a case's score version) already has other numbers."""
    import tempfile

    old = golden()
    same_version = old.get("numerics_version") == NUMERICS_VERSION
    if same_version and old.get("machine") != machine():
        print(f"{GOLDEN} holds the numbers of version {NUMERICS_VERSION} on a {old.get('machine')} "
              f"machine, this is {machine()}: write them on such a machine", file=sys.stderr)
        return 1
    cases, refused = {}, []
    for case in sorted(CASES):
        with tempfile.TemporaryDirectory() as tmp:
            got = journal_numbers(case, Path(tmp), workers=1)
        version = _score_version(CASES[case][0])
        prev = old.get("cases", {}).get(case) if same_version else None
        if prev is not None and prev["score_numerics"] == version and prev["journal"] != got:
            refused.append(case)
        cases[case] = {"score_numerics": version, "journal": got}
    if refused:
        print(f"the numbers of {', '.join(refused)} changed under the same numerics version "
              f"{NUMERICS_VERSION}: bump NUMERICS_VERSION in bigbn/_version.py (or the score's "
              f"`numerics`) first; {GOLDEN} is unchanged", file=sys.stderr)
        return 1
    GOLDEN.write_text(json.dumps({"numerics_version": NUMERICS_VERSION, "regenerate": REGENERATE,
                                  "machine": machine(), "platform": _platform(), "cases": cases},
                                 indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({len(cases)} cases, numerics version {NUMERICS_VERSION})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {REGENERATE}")
    sys.exit(write())
