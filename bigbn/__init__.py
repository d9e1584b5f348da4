"""bigbn: exact Bayesian posterior probabilities of every directed edge of a Bayesian
network (Koivisto 2006), with every 2^n-sized table on disk as a zarr chunk lattice."""

from ._version import __version__


def learn(*args, **kwargs):
    """Exact edge posteriors; see `bigbn.api.learn`."""
    from .api import learn as _learn

    return _learn(*args, **kwargs)


def sample(*args, **kwargs):
    """Exact i.i.d. DAG samples from a finished run; see `bigbn.samples.sample`."""
    from .samples import sample as _sample

    return _sample(*args, **kwargs)


__all__ = ["learn", "sample", "__version__"]
