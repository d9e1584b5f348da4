"""Numba kernels of the engine: pure arithmetic on contiguous float64 chunks, no I/O.

Tables are stored as natural logs; -inf is "zero"/"impossible". Inside a task the values
are extended-exponent numbers (kernels/fastmath.py): a mantissa array m and an exponent array e,
value m·2^e, so a product is a multiply and an add, a sum a few integer and float
operations, and no exp or log is taken per term at any number of rows. The truncated
transforms (α, γ) sum plain float64 where one scale provably holds a chunk, else
extended numbers. Each kernel works on one chunk of the chunk lattice (docs/design.md): a
table over N-bit masks is cut by its high bits into chunks of 2^c entries, chunk id
H = mask >> c, offset o = mask & (2^c - 1).

Kernels (paper references are to Koivisto 2006):
- ``_alpha_chunk``    alpha_i(U) = Σ_{G ⊆ U, |G| ≤ k} beta_i(G) on one chunk (section 2),
                      as extended numbers: beta is folded into the chunk's low bits over
                      the high-part subsets of the chunk id, then a k-truncated upward
                      transform runs over the low bits (section 4, the Koivisto–Sood
                      variant). No cross-chunk work.
- ``_recursion_chunk`` the in-chunk part of the forward recursion
                      L(S) = Σ_{i∈S} alpha_i(S-i)·L(S-i) (eq. 2) and, mirrored, of the
                      backward one B(S) = Σ_{i∉S} alpha_i(S)·B(S+i), B(V) = 1;
                      B(S) = R(V-S) (section 3, stored by predecessor set so no
                      complement is ever read); with α recomputed per tile from β
                      (``_recursion_tiles``; the cross-chunk terms: ``_high_term``).
- ``_gamma_low``, ``_gamma_high``  k-truncated downward transforms (FTDMT, section 4)
                      of one chunk of s_v(S) = L(S)·B(S+v), a tile at a time, scattered (as
                      logs) to the families whose high part lies inside the chunk id:
                      gamma_v(G) = Σ over chunks of these.

The kernel API: what the engine, the sampler and the tests call, as ``kernels.NAME``.
Every kernel lives in one module of this package by concern: ``mobius`` (truncated
transforms), ``ext`` (extended numbers over arrays), ``alpha``, ``recursion``, ``gamma``;
``fastmath`` (scalar extended arithmetic), ``bits``, ``families`` (mask arithmetic),
``maxplus`` and ``mapdag`` (MAP), ``sampling``, ``linext`` sit beside them.
"""

from __future__ import annotations

import importlib

#: the kernel API by module: ``kernels.NAME`` imports its module on first use (PEP 562), so
#: importing one kernel module (``bigbn.kernels.sampling``, whose package this is) does not
#: import and decorate the engine's 49 other kernels: `bigbn sample` never calls them (their
#: numba dispatchers cost ≈ 0.025 s of every such process)
_API = {
    "mobius": (
        "_clear_support", "_upward_truncated", "_downward_truncated", "_add8", "_zeta8",
        "_zeta8_plain", "_zeta8_ext", "_ext_add_rows", "_copy_run", "_add_run",
    ),
    "ext": (
        "_ext_from_log_into", "_log_ext_into", "_ext_fma_into", "_ext_fma_log_into",
        "_ext_add_logs",
    ),
    "alpha": (
        "_SPAN", "_family_weights", "_alpha_ranges", "_select_families", "_alpha_chunk",
        "_alpha_chunks_ext", "_alpha_chunks",
    ),
    "recursion": (
        "_tile_families", "_tile_ranges", "_high_term", "_recursion_tiles", "_BLOCK",
        "_recursion_chunk", "_LOG2_TINY", "_block_weights", "_block_linear", "_block_runs",
        "_block_ext", "_ext_group4",
    ),
    "gamma": (
        "_SPAN2", "_gamma_index", "_tile_products", "_products_run", "_products_log_run",
        "_exponent_range", "_gamma_tile", "_gamma_scatter", "_gamma_low", "_gamma_high",
    ),
}
_MODULE_OF = {name: module for module, names in _API.items() for name in names}


def __getattr__(name: str):
    """``kernels.NAME`` of the API: imported from its module, then kept as an attribute."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
