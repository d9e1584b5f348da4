"""numba's compile cache for bigbn's kernels, outside the installed package.

numba caches compiled kernels next to their source by default, i.e. inside
site-packages; a later ``pip install`` leaves that folder behind, and Python then imports
it as an empty namespace package that hides the new install. So every bigbn module that
compiles with ``cache=True`` imports this module before its first kernel: if numba has
no cache folder configured (no NUMBA_CACHE_DIR when numba was imported, nothing set in
``numba.config``), it gets a per-user one, $XDG_CACHE_HOME/bigbn/numba, else
~/.cache/bigbn/numba. numba picks each kernel's cache folder when the kernel is defined,
so this must come first; it names each module's cache by a hash of its source folder, so
several installs never share entries.

Only ``numba.config.CACHE_DIR`` is set, never ``os.environ``: `import bigbn` changes
nothing (it imports no kernel module), and a worker process (a dask worker, a
subprocess) that runs bigbn's kernels imports them, and so this module, itself.
"""

from __future__ import annotations

import os

import numba


def default_cache_dir() -> str:
    """Where bigbn puts numba's cache unless told otherwise: $XDG_CACHE_HOME/bigbn/numba,
    else ~/.cache/bigbn/numba."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "bigbn", "numba")


def cache_dir() -> str:
    """The folder numba caches bigbn's kernels in."""
    return numba.config.CACHE_DIR


if not numba.config.CACHE_DIR:
    # NUMBA_CACHE_DIR set after numba was imported still wins, as it would at numba's import
    numba.config.CACHE_DIR = os.environ.get("NUMBA_CACHE_DIR") or default_cache_dir()


#: what numba's BLAS probe imports (`numba.np.linalg.ensure_blas`)
_BLAS_PROBE = "scipy.linalg.cython_blas"


def start_without_blas_probe() -> None:
    """Start numba's CPU target now (what the first call of a kernel, cached or not, does)
    with scipy.linalg hidden from the BLAS probe that runs on the way.

    Starting the target imports ``numba.np.arraymath``, which imports scipy.linalg only to
    decide whether np.correlate and np.convolve may call BLAS (``_HAVE_BLAS``); scipy 1.17's
    scipy.linalg copies numpy's namespace on import, and so imports numpy.f2py,
    numpy.testing and the rest: ≈ 0.15–0.2 s of a process (a fifth of `bigbn sample` at
    n = 20). Hidden (a None in sys.modules: `import` raises ImportError, the import
    system's rule), the probe answers "no BLAS"; np.correlate and np.convolve compiled in
    this process then take numba's plain loop. np.dot and np.linalg are not affected: they
    import scipy.linalg when they are compiled. No kernel of bigbn's calls any of them, so
    for a process of its own (the command line's `bigbn sample`) this changes no number;
    the library never calls it (a caller's own numba code is not ours to change). Nothing
    is hidden when scipy.linalg is imported already or the target has started, nor under
    a numba without this layout (`numba.core.registry.cpu_target`, numba 0.49–0.68): it
    then starts as usual on first use (an ImportError here broke every `bigbn sample`)."""
    import sys

    try:
        from numba.core.registry import cpu_target

        refresh = cpu_target.target_context.refresh
    except (ImportError, AttributeError):
        return
    if _BLAS_PROBE in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    sys.modules[_BLAS_PROBE] = None
    try:
        refresh()
    finally:
        if _BLAS_PROBE in sys.modules and sys.modules[_BLAS_PROBE] is None:
            del sys.modules[_BLAS_PROBE]
