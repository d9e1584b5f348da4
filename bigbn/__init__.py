"""bigbn: exact Bayesian posterior probabilities of every directed edge of a Bayesian
network (Koivisto 2006), with every 2^n-sized table on disk as a zarr chunk lattice."""

import os as _os
import sys as _sys

from ._version import __version__
from .knowledge import Knowledge


def _numba_cache_outside_the_package() -> None:
    """numba caches compiled kernels next to their source by default, i.e. inside
    site-packages; a later ``pip install`` leaves that folder behind, and Python then
    imports it as an empty namespace package that hides the new install. So the cache
    goes to a per-user folder ($XDG_CACHE_HOME/bigbn/numba, else ~/.cache/bigbn/numba),
    unless NUMBA_CACHE_DIR says otherwise. numba names each module's cache by a hash of
    its source folder, so several installs never share entries."""
    if _os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = _os.environ.get("XDG_CACHE_HOME") or _os.path.join(_os.path.expanduser("~"), ".cache")
    path = _os.path.join(base, "bigbn", "numba")
    _os.environ["NUMBA_CACHE_DIR"] = path  # also for worker processes started from here
    if "numba" in _sys.modules:  # imported before bigbn: its config has read the environment
        _sys.modules["numba"].config.CACHE_DIR = path


_numba_cache_outside_the_package()


def learn(*args, **kwargs):
    """Exact edge posteriors; see `bigbn.api.learn`."""
    from .api import learn as _learn

    return _learn(*args, **kwargs)


def sample(*args, **kwargs):
    """Exact i.i.d. DAG samples from a finished run; see `bigbn.samples.sample`."""
    from .samples import sample as _sample

    return _sample(*args, **kwargs)


def effects(*args, **kwargs):
    """Causal effects averaged over the exact parent-set posterior (Bayesian IDA); see
    `bigbn.causal.effects`."""
    from .causal import effects as _effects

    return _effects(*args, **kwargs)


__all__ = ["learn", "sample", "effects", "Knowledge", "__version__"]
