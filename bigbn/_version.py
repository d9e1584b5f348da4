"""The package version (its own module, so that modules need not import the package), and
the numerics version."""

__version__ = "0.1.0"

#: The version of the numbers bigbn computes: a run's fingerprint stores it, and a work
#: directory written under another value refuses to resume (``--fresh`` starts over).
#: Bump it (1 → 2) in the commit that changes any number that any table, chunk file or
#: journal record of any run can hold, for any input: the kernels, their summation order,
#: chunking, family order, priors, tiers, interventions, MAP, the offsets... Do not bump
#: it for anything else (orchestration, messages, comments, layout of the code): a work
#: directory of the previous commit then resumes. A score's own code has its own version
#: (`bigbn.scores.base.Score.numerics`). tests/test_numerics.py holds golden journal checksums
#: of small runs under this version and fails, saying what to bump, when they change.
NUMERICS_VERSION = 1
