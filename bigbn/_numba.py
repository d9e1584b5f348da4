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
