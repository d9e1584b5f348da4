"""Local scores from files: the ``.jkl`` format of GOBNILP, aps and modular-dag-sampling.

A user can bring any local score (BIC, a custom likelihood, another program's BDeu) to
the exact engine. The format, natural-log scores, whitespace separated:

    3                      the number of variables n
    A 2                    a block per variable: its name (or index 0..n-1) and how many
    -12.5 0                  parent sets follow, one per line: the score, the number of
    -10.25 1 B               parents, the parents (names, or indices)
    B 1
    -8.0 0
    C 3
    ...

Either every block names its variable by an index 0..n-1 (the variables are then called
"0", "1", …) or by a name (variables in block order); parents are written the same way.
Families absent from the file, and families with more than k parents, are impossible
(β = −inf). Every line is checked; a problem is a `DataError` naming file and line.

A jkl score is the whole local score β_i(G): bigbn adds no structure prior to it (ρ ≡ 1),
only the hard constraints and edge probabilities asked for (forbid, require, edge_prob,
max_parents). `bigbn scores` writes β = log ρ_i(G) + log p(x_i | x_G) under the structure
prior it is given, so running on that file gives the posterior of the run on the data, bit
for bit (scores are written with 17 significant digits).
"""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bigbn.kernels.bits import popcount
from bigbn.io.data import DECIMAL, check_name, read_text
from bigbn.errors import DataError, OptionError
from bigbn.kernels.families import family_masks, family_rank, squeeze, unsqueeze
from bigbn.scores.offsets import SAFE
from bigbn.scores.base import Score

__all__ = ["ScoreFile", "FileScore", "read_jkl", "write_jkl", "jkl1_doubt"]


@dataclass(frozen=True, eq=False)
class ScoreFile:
    """The local scores of a jkl file. names: the n variables; families[i]: {full n-bit
    parent mask: score − offsets[i]}; offsets[i]: 0, or, for a variable with a score beyond
    ±`bigbn.scores.offsets.SAFE`, its largest score, subtracted in exact decimal arithmetic from
    the file's text (a per-variable constant leaves the posterior unchanged, and float64
    then holds every difference that can matter however large the scores: `read_jkl`);
    path: the file; exact: for a shifted variable its scores as `decimal.Decimal` (None for
    the others), so that `rebase` can shift it again, exactly. Stands in for a Dataset in
    `learn` (kind "scores", no rows)."""

    path: str
    names: tuple[str, ...]
    families: tuple[dict[int, float], ...]
    offsets: tuple[float, ...] = ()
    exact: tuple = ()
    kind = "scores"
    m = None

    @property
    def n(self) -> int:
        return len(self.names)

    def digest(self) -> str:
        """SHA-256 of the scores: the run fingerprint's data hash."""
        h = hashlib.sha256("\0".join(self.names).encode())
        for fam in self.families:
            masks = np.array(sorted(fam), dtype=np.int64)
            h.update(masks.tobytes() + np.array([fam[int(g)] for g in masks]).tobytes() + b"\1")
        if any(self.offsets):
            h.update(b"offsets" + np.array(self.offsets, dtype=np.float64).tobytes())
        return h.hexdigest()

    def rebase(self, alive) -> "ScoreFile":
        """This file with each shifted variable's scores taken off the largest score of a
        parent set the run can use (``alive(i, mask)``: whether the run gives variable i the
        family of full mask ``mask``, i.e. at most k parents, allowed by the tiers and not
        ruled out by the constraints), exactly in decimal, where that score lies more than
        `SAFE` from the file's largest; ``self`` when no shift changes. The reader shifts by the file's largest score, but when that family
        cannot enter the run (more parents than k, a forbidden edge), the others, rounded
        to float64 near that score (say 1e20), had lost the differences that decide the
        posterior: a wrong answer with no error. Within `SAFE` float64 holds them to
        2.3e-10 nats, and the shift is left as it was (a run gives the bits it gave)."""
        if not self.exact:
            return self
        families, offsets, changed = list(self.families), list(self.offsets), False
        for i, exact in enumerate(self.exact):
            if exact is None:
                continue
            top = _best_alive(self.families[i], exact, lambda g: alive(i, g))
            if top is None:
                continue
            if abs(float(top) - offsets[i]) <= SAFE:  # carried within 2.3e-10 nats: the bits as before
                continue
            families[i] = {g: float(x - top) for g, x in exact.items()}
            offsets[i] = float(top)
            changed = True
        if not changed:
            return self
        return ScoreFile(self.path, self.names, tuple(families), tuple(offsets), self.exact)

    def log_offsets(self) -> np.ndarray:
        """c_i subtracted from variable i's scores, float64 (n,): log p(x) = L(V) + Σ c_i."""
        return np.array(self.offsets, dtype=np.float64) if self.offsets else np.zeros(self.n)

    def local(self, k: int) -> np.ndarray:
        """β_i(G) in the layout of `bigbn.kernels.families`, float64 (n, F): the file's score, −inf
        for a family not in the file or with more than k parents. OptionError if a variable
        is left without any family of at most k parents."""
        n = self.n
        masks = family_masks(n - 1, k)
        out = np.full((n, masks.size), -np.inf)
        for i, fam in enumerate(self.families):
            sq = [(squeeze(g, i), s) for g, s in fam.items() if popcount(g) <= k]
            if not sq:
                raise OptionError(f"{self.path}: variable '{self.names[i]}' has no parent set of at "
                                  f"most {k} parent{'s' * (k != 1)} in the file (raise max parents)")
            out[i, family_rank(masks, np.array([g for g, _ in sq], dtype=np.int64))] = [s for _, s in sq]
        return out


def _best_alive(family: dict, exact: dict, alive):
    """The largest of ``exact`` (mask: Decimal) over the masks ``alive(mask)`` holds, None if
    none: asked from the best float score down (``family``: mask: float64 of the same
    scores less one constant, so in their order, ties aside), and no further than the
    first alive one's ties. ``alive`` of every family (a family_rank each) took 3 s of a
    run's 3.4 s of scoring at n = 22, k = 4, when the file's best family is usable."""
    masks = list(family)
    vals = np.fromiter(family.values(), dtype=np.float64, count=len(masks))
    top, best = None, None
    for j in np.argsort(-vals, kind="stable").tolist():
        if best is not None and vals[j] < best:  # rounding keeps the order: no larger one below
            break
        if alive(masks[j]):
            top = exact[masks[j]] if top is None else max(top, exact[masks[j]])
            best = vals[j]
    return top


class FileScore(Score):
    """The score of a run on a `ScoreFile`: the file's scores (and −inf for the families it
    leaves out)."""

    name = "jkl"
    data_kind = "scores"
    modules = ("bigbn.scores.jkl",)
    # bump on any change of how a file's scores become a run's (bigbn.scores.base); jkl-2: a
    # variable is shifted by the best score of a family the run can use (`ScoreFile.rebase`), so a
    # huge score of an unusable family no longer rounds the others together
    numerics = "jkl-2"
    description = "local scores read from a .jkl file"
    impossible_families = True

    def local_scores(self, ds, k, options):
        return ds.local(k)

    def family_scores(self, ds, k, options, sets):
        """The file's scores in the families named by ``sets`` (`Score.family_scores`): −inf
        for a named family the file leaves out, NaN where none is named."""
        parent_sets, index, width = sets
        row = {tuple(int(u) for u in ps if u >= 0): r for r, ps in enumerate(parent_sets.tolist())}
        out = np.full((ds.n, width), np.nan)
        for i in range(ds.n):
            named = index[:, i] >= 0
            out[i, index[named, i]] = -np.inf
            for g, s in ds.families[i].items():
                r = row.get(tuple(u for u in range(ds.n) if g >> u & 1))
                if r is not None and index[r, i] >= 0:
                    out[i, index[r, i]] = s
        return out


def jkl1_doubt(source: str, data_sha256: str, k: int, constrained: bool, shifted: bool = True) -> str | None:
    """Why a run that numerics jkl-1 (bigbn before `ScoreFile.rebase`) computed from the .jkl
    file ``source`` may hold wrong posteriors, or None when it holds jkl-2's. jkl-1 shifted
    a variable with a score beyond ±`SAFE` by its largest score; when that family could not
    enter the run and the best that could lay more than `SAFE` below it, the usable scores
    had been rounded together. Decided from the file, if it is still the run's (its digest
    is the run's data hash): a variable whose best family of at most k parents lies more
    than `SAFE` below its largest score was rounded; with constraints or tiers (which this
    does not replay) any variable shifted by a family they may rule out is in doubt.
    ``shifted``: whether the run journaled a shift of its scores; a run that did not had
    every score within ±`SAFE` (jkl-1 shifted none of them, the bits are jkl-2's), so a file
    since moved, deleted or changed is no doubt then (it is read when it can be, the
    authority: a journal's shifts could sum to 0)."""
    try:
        sf = read_jkl(source)
    except (OSError, DataError):
        return f"{source} cannot be read to check" if shifted else None
    if sf.digest() != data_sha256:
        return f"{source} has changed since the run, so it cannot be checked" if shifted else None
    for i, exact in enumerate(sf.exact or ()):
        if exact is None:
            continue
        top = _best_alive(sf.families[i], exact, lambda g: popcount(g) <= k)
        if top is not None and abs(float(top) - sf.offsets[i]) > SAFE:
            return f"variable '{sf.names[i]}' has its largest score on a parent set of more than {k} parent{'s' * (k != 1)}"
        if constrained:
            return f"variable '{sf.names[i]}' has scores beyond ±{SAFE:g} and the run has constraints or tiers"
    return None


def _lines(path: str):
    """(line number, whitespace-separated tokens) of every non-blank line."""
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        tokens = line.split()
        if tokens:
            yield number, tokens


def read_jkl(path) -> ScoreFile:
    """Read and check a jkl file (module docstring). DataError "FILE, line L: ..." for: a
    missing or bad variable count; a block header that is not "name count" or a count that
    is not a positive integer; a score line with a non-number or non-finite score (NaN,
    inf), a parent count that does not match the parents listed, an unknown parent, the
    variable itself or a parent listed twice; a parent set listed twice in a block; a
    variable with two blocks; fewer blocks than variables (a block's count too large) or
    text after the last block."""
    p = os.fspath(path)
    lines = _lines(p)
    first = next(lines, None)
    if first is None:
        raise DataError(f"{p}: empty file (a jkl file starts with the number of variables)")
    line, tokens = first
    if len(tokens) != 1 or not _count(tokens[0]) or int(tokens[0]) < 2:
        raise DataError(f"{p}, line {line}: expected the number of variables (an integer ≥ 2), "
                        f"got {' '.join(tokens)!r}")
    n = int(tokens[0])
    blocks = []  # (line, name, [(line, score, parent tokens)])
    for _ in range(n):
        head = next(lines, None)
        if head is None:
            raise DataError(f"{p}: {len(blocks)} blocks, but line {first[0]} says {n} variables")
        line, tokens = head
        if len(tokens) != 2 or not _count(tokens[1]):
            raise DataError(f"{p}, line {line}: expected a block header 'variable count' (count ≥ 1), "
                            f"got {' '.join(tokens)!r}" + _hint(blocks))
        check_name(f"{p}, line {line}", tokens[0], "variable name")  # as every reader of names does
        if int(tokens[1]) == 0:
            raise DataError(f"{p}, line {line}: the block of '{tokens[0]}' declares 0 parent sets; every "
                            "variable needs at least one (list its empty parent set, '<score> 0')")
        rows = []
        for j in range(int(tokens[1])):
            row = next(lines, None)
            if row is None:
                raise DataError(f"{p}: the block of '{tokens[0]}' (line {line}) declares {tokens[1]} "
                                f"parent sets, the file ends after {j}")
            rows.append(_score_line(p, row, tokens[0], line, tokens[1], j))
        blocks.append((line, tokens[0], rows))
    extra = next(lines, None)
    if extra is not None:
        raise DataError(f"{p}, line {extra[0]}: text after the last of the {n} blocks"
                        + _hint(blocks))
    ids = [b[1] for b in blocks]
    # indices as written: '00' and '01' are names (read as 0 and 1, they were renamed "0", "1")
    by_index = all(_count(t) and t == str(int(t)) for t in ids) and sorted(int(t) for t in ids) == list(range(n))
    if by_index:
        names = tuple(str(i) for i in range(n))
        index = {t: int(t) for t in ids}
    else:
        names = tuple(ids)
        index = {}
        for line, t, _ in blocks:
            if t in index:
                raise DataError(f"{p}, line {line}: a second block for variable '{t}'")
            index[t] = len(index)
    families: list[dict[int, float]] = [{} for _ in range(n)]
    texts: list[dict[int, str]] = [{} for _ in range(n)]
    for line_h, t, rows in blocks:
        i = index[t]
        fam = families[i]
        for line, score, parents, text in rows:
            mask = 0
            for q in parents:
                if q not in index:
                    raise DataError(f"{p}, line {line}: unknown parent {q!r} (not a variable of the file"
                                    + (": variables are indices 0.." + str(n - 1) if by_index else "")
                                    + ")")
                b = index[q]
                if b == i:
                    raise DataError(f"{p}, line {line}: variable '{t}' listed as its own parent")
                if mask >> b & 1:
                    raise DataError(f"{p}, line {line}: parent {q!r} listed twice")
                mask |= 1 << b
            if mask in fam:
                raise DataError(f"{p}, line {line}: this parent set of '{t}' is listed twice in its block")
            fam[mask] = score
            texts[i][mask] = text
    offsets = [0.0] * n
    decimals: list = [None] * n
    for i, fam in enumerate(families):
        if max(abs(v) for v in fam.values()) > SAFE:
            # the file's decimals less their largest, exactly: the differences that decide
            # the posterior survive whatever the scores' magnitude (bigbn/scores/offsets.py;
            # ScoreFile.rebase when the largest is of a family the run cannot use)
            exact = {g: Decimal(x) for g, x in texts[i].items()}
            top = max(exact.values())
            families[i] = {g: float(x - top) for g, x in exact.items()}
            offsets[i] = float(top)
            decimals[i] = exact
    shifted = any(x is not None for x in decimals)
    return ScoreFile(p, names, tuple(families), tuple(offsets) if shifted else (),
                     tuple(decimals) if shifted else ())


def _count(token: str) -> bool:
    """Whether ``token`` is a count as the format writes it: ASCII digits only (str.isdigit
    also takes '²' and other scripts' digits, which int() then refuses or misreads)."""
    return token.isascii() and token.isdigit()




def _hint(blocks) -> str:
    if not blocks:
        return ""
    line, name, rows = blocks[-1]
    return f" (does the block of '{name}' on line {line} declare the right count, {len(rows)}?)"


def _score_line(p, row, name, head_line, count, j):
    line, tokens = row
    what = f"score line {j + 1} of {count} of the block of '{name}' (line {head_line})"
    try:
        score = float(tokens[0])
    except ValueError:
        raise DataError(f"{p}, line {line}: expected {what}: 'score size parents...', got "
                        f"{' '.join(tokens)!r}") from None
    if not math.isfinite(score):
        raise DataError(f"{p}, line {line}: score {tokens[0]!r} is not a finite number (leave an "
                        "impossible parent set out of the file)")
    if not DECIMAL.fullmatch(tokens[0]):  # float() also reads '1_0' as 10 and other scripts' digits
        raise DataError(f"{p}, line {line}: score {tokens[0]!r} is not a decimal number (digits 0-9, "
                        "a point, an exponent)")
    if len(tokens) < 2 or not _count(tokens[1]):
        raise DataError(f"{p}, line {line}: expected {what}: 'score size parents...', got "
                        f"{' '.join(tokens)!r}")
    if int(tokens[1]) != len(tokens) - 2:
        raise DataError(f"{p}, line {line}: says {tokens[1]} parent{'s' * (int(tokens[1]) != 1)} but lists "
                        f"{len(tokens) - 2}")
    return line, score, tokens[2:], tokens[0]


def write_jkl(path, names, beta: np.ndarray, k: int) -> None:
    """Write β (n, F), the layout of `bigbn.kernels.families` with at most k parents, as a jkl
    file: names as given, every family with a finite β (17 significant digits: read back,
    the same float64), UTF-8 whatever the locale. Written to a temporary file first, then
    moved into place (the temporary file removed if that fails)."""
    n = len(names)
    for nm in names:
        if not nm or any(ch.isspace() for ch in nm):
            raise OptionError(f"variable name {nm!r} holds whitespace, which a jkl file cannot: "
                              "rename the column")
    masks = family_masks(n - 1, k)
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:  # as read_jkl reads it, whatever the locale
            fh.write(f"{n}\n")
            for i in range(n):
                keep = np.flatnonzero(np.isfinite(beta[i]))
                fh.write(f"{names[i]} {keep.size}\n")
                for f in keep.tolist():
                    full = unsqueeze(int(masks[f]), i)
                    ps = [names[b] for b in range(n) if full >> b & 1]
                    fh.write(" ".join([repr(float(beta[i, f])), str(len(ps)), *ps]) + "\n")
        os.replace(tmp, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)  # not a half-written file left beside the output
        raise OptionError(f"cannot write {out}: {e.strerror}") from None
    except BaseException:  # Ctrl-C while writing
        tmp.unlink(missing_ok=True)
        raise
