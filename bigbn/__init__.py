"""bigbn: exact Bayesian posterior probabilities of every directed edge of a Bayesian
network (Koivisto 2006), with every 2^n-sized table on disk as a zarr chunk lattice."""

from ._version import __version__


def learn(*args, **kwargs):
    """Exact edge posteriors; see `bigbn.api.learn`."""
    from .api import learn as _learn

    return _learn(*args, **kwargs)


__all__ = ["learn", "__version__"]
