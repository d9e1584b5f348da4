"""One exception hierarchy for bigbn (rooted in ValueError, as zarr-python does).

Library code raises these; the CLI turns them into one-line messages and a non-zero exit.
A traceback reaching a user means a bug.
"""


class BigBNError(ValueError):
    """Base class of every error bigbn raises on purpose."""


class DataError(BigBNError):
    """The input data is malformed (names file, row and column where possible)."""


class OptionError(BigBNError):
    """An option or combination of options is invalid or unsatisfiable."""


class WorkdirError(BigBNError):
    """The work directory cannot be used (other run, lock held, disk too small, corrupt)."""


class EngineError(BigBNError):
    """The computation produced something impossible (a bug or corrupted tables)."""


class BigBNWarning(UserWarning):
    """Warnings issued by bigbn itself (errors under pytest)."""
