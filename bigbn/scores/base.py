"""Local scores behind one interface: what a score is, and the scores bigbn knows.

A score is an object (a `Score` subclass) that declares

- ``name`` and ``data_kind``: what ``score=`` / ``--score`` call it and the data it needs
  ("discrete" codes or "continuous" numbers);
- ``options``: its parameters (`Option`: name, default, what values are legal). The same
  `check_options` validates them for the API and the CLI: an option the score does not
  take (``learn(score="bge", ess=5)``), or a value out of range, is refused with the same
  one-line message from both;
- ``numerics``: the version of its numbers (a short string, e.g. "bge-1"), part of a
  run's fingerprint (`numerics_version`), so a workdir is never resumed by code that
  scores differently: bump it in the commit that changes any score it computes, for any
  input (tests/test_numerics.py checks golden values of the built-in scores). A score that
  does not declare it in its own class (a notebook's class, or a subclass of a built-in)
  is fingerprinted by the source of its ``modules`` and of its class instead: any edit of
  those refuses a resume, which is safe;
- ``modules``: the Python modules whose source decides its numbers (see ``numerics``);
- ``local_scores(ds, k, options)``: log p(x_i | x_G) for every node i and family G,
  |G| ≤ k, float64 (n, F) in the layout of `bigbn.kernels.families` (no structure prior: the
  caller adds log ρ);
- ``parameter_prior(options)``: what causal effects need: the prior of the score's own
  parameter model, from which `bigbn.outputs.effects` takes the posterior-mean parameters given each
  parent set (Dirichlet: ``{"k2": ..., "ess": ...}``; normal-Wishart: ``{"alpha_mu": ...,
  "alpha_w": ...}``). A score without a parameter model returns None and effects are refused.

`BUILTIN` lists the scores bigbn ships. A new score is one module with a `Score` subclass
plus one line in `BUILTIN`; a score defined elsewhere (a notebook, a test) is passed as an
object, ``learn(data, score=MyScore())``, and runs through the same engine.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import marshal
import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from bigbn.io.data import Dataset
from bigbn.errors import OptionError

__all__ = ["Option", "Score", "BDeu", "K2", "BGe", "CG", "BUILTIN", "AUTO", "names", "lookup",
           "resolve", "check_options", "numerics_version", "source_fingerprint"]

#: the score name that picks by data kind: BGe for continuous data, CG for mixed, else BDeu
AUTO = "auto"


@dataclass(frozen=True)
class Option:
    """A parameter of a score: a positive finite number.

    name: the keyword (``learn(ess=...)``) and, with ``_`` as ``-``, the CLI flag
    (``--ess``); label: how error messages name it; default: used when not given (None: the
    score derives it from the data, e.g. BGe's α_w = n + α_μ + 1); help: one line for
    ``--help``; hyper: a Dirichlet or normal-Wishart hyperparameter, at most
    `bigbn.scores.discrete.MAX_HYPER` (`bigbn.scores.discrete` says why)."""

    name: str
    label: str
    default: float | None
    help: str
    hyper: bool = True

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value) -> float:
        """The value as a float, or OptionError naming the option and the value."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):  # '1' is text, not a number
            raise OptionError(f"{self.label} must be a positive number, got {value!r}")
        from bigbn.options import as_float

        x = as_float(value, self.label)  # 10**400: one line, not float's OverflowError
        if not (math.isfinite(x) and x > 0):
            raise OptionError(f"{self.label} must be a positive number, got {value!r}")
        if self.hyper:
            from bigbn.scores.discrete import MAX_HYPER  # here: the CLI imports this module, numba not yet

            if x > MAX_HYPER:
                raise OptionError(f"{self.label} {x:g} is above {MAX_HYPER:g}, the largest accepted "
                                  "(as it grows the posteriors tend to the prior's anyway)")
        return x


class Score:
    """One local score (see the module docstring). Subclasses set the class attributes and
    implement `local_scores`; `parameter_prior` is optional."""

    name: str = ""
    data_kind: str = "discrete"
    options: tuple[Option, ...] = ()
    modules: tuple[str, ...] = ()
    #: the version of the score's numbers; None: fingerprinted by its source (`numerics_version`)
    numerics: str | None = None
    description: str = ""
    #: whether some families may score −inf (impossible): scores read from a file; a score
    #: computed from data must be finite everywhere (−inf there means overflow)
    impossible_families: bool = False

    def local_scores(self, ds: Dataset, k: int, options: dict) -> np.ndarray:
        """log p(x_i | x_G), float64 (n, F), F = Σ_{j ≤ k} C(n − 1, j); ``options`` as
        `check_options` returns them (every option, defaults filled in)."""
        raise NotImplementedError

    def family_scores(self, ds: Dataset, k: int, options: dict, sets) -> np.ndarray:
        """log p(x_i | x_G) of the families named by ``sets`` = (parent_sets, family_index,
        width) (see `bigbn.scores.discrete.local_scores`): float64 (n, width), NaN where none is
        named. Runs with tiers score their families this way (any n, no bit masks); a score
        without it does not take tiers."""
        raise OptionError(f"the {self.name} score does not take tiers (bdeu, k2 and bge do)")

    def parameter_prior(self, options: dict) -> dict | None:
        """The prior of the score's parameter model, for causal effects (module docstring);
        None: the score has none."""
        return None

    def data_warnings(self, ds: Dataset) -> list[str]:
        """Lines on data that are legal but that the score's model does not expect (`learn`
        warns with each, a `BigBNWarning`; the CLI prints them); none by default."""
        return []

    def __repr__(self) -> str:
        return f"<score {self.name}>"


# ------------------------------------------------------------------------------ built-ins

class _Dirichlet(Score):
    """The discrete scores of `bigbn.scores.discrete`: Dirichlet-multinomial marginal likelihoods."""

    data_kind = "discrete"
    modules = ("bigbn.scores.discrete",)
    k2 = False

    def local_scores(self, ds, k, options):
        from bigbn.scores.discrete import local_scores

        return local_scores(ds, k, self.name, options.get("ess", 1.0))

    def family_scores(self, ds, k, options, sets):
        from bigbn.scores.discrete import local_scores

        return local_scores(ds, k, self.name, options.get("ess", 1.0), sets=sets)

    def parameter_prior(self, options):
        return {"k2": self.k2, "ess": options.get("ess", 1.0)}


class BDeu(_Dirichlet):
    name = "bdeu"
    numerics = "bdeu-2"  # bump on any change of a BDeu score (module docstring)
    description = "BDeu (Heckerman, Geiger & Chickering 1995), equivalent sample size ess"
    options = (Option("ess", "ess (equivalent sample size)", 1.0,
                      "BDeu equivalent sample size  [default: 1]"),)


class K2(_Dirichlet):
    name = "k2"
    numerics = "k2-2"  # bump on any change of a K2 score (module docstring)
    description = "K2 (Cooper & Herskovits 1992): Dirichlet(1) on every cell"
    k2 = True


class BGe(Score):
    name = "bge"
    data_kind = "continuous"
    description = "BGe (Geiger & Heckerman 2002; Kuipers, Moffa & Heckerman 2014)"
    modules = ("bigbn.scores.bge",)
    numerics = "bge-5"  # bump on any change of a BGe score (module docstring)
    options = (Option("alpha_mu", "BGe alpha_mu", 1.0, "BGe α_μ  [default: 1]"),
               Option("alpha_w", "BGe alpha_w", None, "BGe α_w (default n + α_μ + 1)."))

    def local_scores(self, ds, k, options):
        from bigbn.scores.bge import bge_scores

        return bge_scores(ds, k, alpha_mu=options["alpha_mu"], alpha_w=options["alpha_w"])

    def family_scores(self, ds, k, options, sets):
        from bigbn.scores.bge import bge_family_scores

        return bge_family_scores(ds, sets, alpha_mu=options["alpha_mu"], alpha_w=options["alpha_w"])

    def parameter_prior(self, options):
        return {"alpha_mu": options["alpha_mu"], "alpha_w": options["alpha_w"]}

    def data_warnings(self, ds):
        from bigbn.scores.bge import scale_warnings

        return scale_warnings(ds)


class CG(Score):
    name = "cg"
    data_kind = "mixed"
    description = ("CG: conditional Gaussian networks of discrete and continuous columns (Bøttcher "
                   "2001): BDeu for discrete nodes, BGe per discrete-parent configuration")
    modules = ("bigbn.scores.cg",)
    numerics = "cg-7"  # bump on any change of a CG score (module docstring)
    impossible_families = True  # a discrete node with a continuous parent
    options = (Option("ess", "ess (equivalent sample size)", 1.0, "BDeu equivalent sample size  [default: 1]"),
               Option("alpha_mu", "CG alpha_mu", 1.0, "BGe α_μ  [default: 1]"),
               Option("alpha_w", "CG alpha_w", None, "BGe α_w (default n + α_μ + 1)."))

    def data_warnings(self, ds):
        """BGe's unit-scale line for the continuous columns: each configuration's prior is
        BGe's, T = t·I (`bigbn.scores.cg` docstring)."""
        from bigbn.scores.bge import scale_warnings

        return scale_warnings(ds, [j for j, r in enumerate(ds.arities.tolist()) if r == 0], "continuous ",
                              "the cg score's prior (BGe's, in each configuration)")

    def local_scores(self, ds, k, options):
        from bigbn.scores.cg import cg_scores

        return cg_scores(ds, k, options["ess"], options["alpha_mu"], options["alpha_w"])

    def family_scores(self, ds, k, options, sets):
        from bigbn.scores.cg import cg_scores

        return cg_scores(ds, k, options["ess"], options["alpha_mu"], options["alpha_w"], sets=sets)


#: The scores bigbn ships, by name (read only). Registering a score is one line here.
BUILTIN = MappingProxyType({s.name: s for s in (
    BDeu(),
    K2(),
    BGe(),
    CG(),
)})

#: which built-in score "auto" picks for each kind of data
_AUTO = {"discrete": "bdeu", "continuous": "bge", "mixed": "cg"}


def names() -> tuple[str, ...]:
    """What ``score=`` accepts by name: "auto" and the built-in scores."""
    return (AUTO, *BUILTIN)


def lookup(score) -> Score | None:
    """The Score for ``score`` (a name or a Score object); None for "auto"."""
    if isinstance(score, Score):
        return score
    name = str(score).lower()
    if name == AUTO:
        return None
    if name not in BUILTIN:
        raise OptionError(f"unknown score '{score}' (choose one of: {', '.join(names())})")
    return BUILTIN[name]


def resolve(score, data_kind: str) -> Score:
    """The Score a run uses: ``score`` ("auto", a name or a Score) for data of ``data_kind``;
    OptionError if the score needs the other kind of data."""
    s = lookup(score)
    if s is None:
        s = BUILTIN[_AUTO[data_kind]]
    if s.data_kind != data_kind:
        raise OptionError(f"score '{s.name}' needs {s.data_kind} data, but the data is {data_kind}")
    return s


def check_options(score: Score, given: dict) -> dict:
    """Validate the options ``given`` (name → value, None = not given) for ``score``:
    every option of ``score``, checked, defaults filled in. An option of another score (or
    of none) is refused: it would be silently ignored."""
    own = {o.name: o for o in score.options}
    out = {}
    for name, value in given.items():
        if value is None:
            continue
        if name not in own:
            owners = [s.name for s in BUILTIN.values() if any(o.name == name for o in s.options)]
            if owners:
                flag = "--" + name.replace("_", "-")
                raise OptionError(f"{name} ({flag}) is a parameter of the {owners[0]} score; this run "
                                  f"uses {score.name} (choose score {owners[0]}, or drop {name})")
            takes = ", ".join(own) or "no options"
            raise OptionError(f"unknown option {name!r} of the {score.name} score (it takes: {takes})")
        out[name] = own[name].check(value)
    return {o.name: out.get(o.name, o.default) for o in score.options}


def all_options() -> tuple[Option, ...]:
    """Every option of the built-in scores, each name once (the CLI's flags)."""
    seen: dict[str, Option] = {}
    for s in BUILTIN.values():
        for o in s.options:
            seen.setdefault(o.name, o)
    return tuple(seen.values())


def numerics_version(score: Score) -> str:
    """What a run's fingerprint stores for the score's code ("score_numerics"): the
    ``numerics`` version its class declares (the built-in scores, bumped by hand when
    their numbers change), else `source_fingerprint`. A version inherited from a built-in
    does not count: a subclass may compute differently."""
    declared = vars(type(score)).get("numerics")
    return declared if isinstance(declared, str) and declared else source_fingerprint(score)


def source_fingerprint(score: Score) -> str:
    """SHA-256 (first 16 hex digits) of the source of ``score.modules`` and of the score's
    class (its compiled code where Python has no source, e.g. a class typed at a prompt):
    the "score_numerics" of a score without a declared ``numerics`` version, so a workdir
    is never resumed by code that scores differently."""
    h = hashlib.sha256(score.name.encode() + b"\0" + str(score.numerics).encode() + b"\0")
    for mod in score.modules:
        spec = importlib.util.find_spec(mod)
        if spec is None or not spec.origin:
            raise OptionError(f"the {score.name} score names module {mod!r}, which cannot be found")
        with open(spec.origin, "rb") as fh:
            h.update(mod.encode() + b"\0" + fh.read() + b"\0")
    for cls in type(score).__mro__:
        if cls.__module__ == __name__ or cls is object:
            continue  # this module's classes are covered by NUMERICS_VERSION
        try:
            h.update(inspect.getsource(cls).encode() + b"\0")
        except (OSError, TypeError):
            for key, value in sorted(vars(cls).items()):
                code = getattr(getattr(value, "__func__", value), "__code__", None)
                plain = isinstance(value, (str, int, float, tuple, type(None)))
                h.update(key.encode() + b"\0" + (marshal.dumps(code) if code is not None else
                                                 repr(value).encode() if plain else b"") + b"\0")
    return h.hexdigest()[:16]
