"""bigbn: exact Bayesian posterior probabilities of every directed edge of a Bayesian
network (Koivisto 2006), with every 2^n-sized table on disk as a zarr chunk lattice."""

from bigbn._version import __version__
from bigbn.knowledge import Knowledge

# numba's compile cache lives outside the package: bigbn/_numba.py, imported by every
# module that compiles kernels (importing bigbn changes neither os.environ nor numba).


def _in_python_words(fn, args, kwargs):
    """fn(*args, **kwargs); a bigbn error's message, worded for the command line, is
    reworded for a Python caller (`bigbn.options.python_spelling`: fresh=True, not --fresh)."""
    from bigbn.errors import BigBNError

    try:
        return fn(*args, **kwargs)
    except BigBNError as e:
        from bigbn.options import python_spelling

        e.args = (python_spelling(str(e)),) + e.args[1:]
        raise


def learn(*args, **kwargs):
    """Exact edge posteriors; see `bigbn.api.learn`."""
    from bigbn.api import learn as _learn

    return _in_python_words(_learn, args, kwargs)


def sample(*args, **kwargs):
    """Exact i.i.d. DAG samples from a finished run; see `bigbn.outputs.samples.sample`."""
    from bigbn.outputs.samples import sample as _sample

    return _in_python_words(_sample, args, kwargs)


def effects(*args, **kwargs):
    """Causal effects averaged over the exact parent-set posterior (Bayesian IDA); see
    `bigbn.outputs.effects.effects`."""
    from bigbn.outputs.effects import effects as _effects

    return _in_python_words(_effects, args, kwargs)


def open(workdir):  # noqa: A001 - bigbn.open(workdir), as the package's verb for a finished run
    """The `Result` of the finished run in ``workdir`` (with its samples and effects if a
    `bigbn sample` / `bigbn effects` left them); see `bigbn.outputs.reopen.open_run`."""
    from bigbn.outputs.reopen import open_run

    return _in_python_words(open_run, (workdir,), {})


# not in __all__: `from bigbn import *` must not shadow the builtin open
__all__ = ["learn", "sample", "effects", "Knowledge", "__version__"]
