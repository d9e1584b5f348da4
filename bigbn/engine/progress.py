"""Progress: one event protocol from every stage of bigbn to whatever shows it.

A `Listener` is an executor callback (`bigbn.engine.executors.Callback`: ``on_task_start`` /
``on_task_end``, each task of a lattice as it starts and ends) that also gets
``on_progress(ProgressEvent(stage, done, total))``: how far a stage is, in its own
units (a lattice stage's tasks, "tier 2/4 forward" in a tiered run; the scores; the
chunks a sampler swept; the causes whose effects are done). Every stage reports through
`report`; the CLI renders the events in one place (`bigbn.cli.main.Progress`, a Listener).

``learn``, ``sample`` and ``effects`` take ``progress=``: a Listener, or a plain callable
``progress(stage, done, total)``, which `listener` adapts (it is called with each
ProgressEvent's fields).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from bigbn.errors import OptionError
from bigbn.engine.executors import Callback


@dataclass(frozen=True)
class ProgressEvent:
    """Stage ``stage`` has ``done`` of ``total`` units of work done."""

    stage: str
    done: int
    total: int


class Listener(Callback):
    """What gets a run's events: the executors' task events (`Callback`) and every
    stage's `ProgressEvent`; override what you need."""

    def on_progress(self, event: ProgressEvent) -> None:
        pass


class _Call(Listener):
    """A callable ``progress(stage, done, total)`` as a Listener."""

    def __init__(self, fn: Callable[[str, int, int], object]):
        self.fn = fn

    def on_progress(self, event: ProgressEvent) -> None:
        self.fn(event.stage, event.done, event.total)


def listener(progress) -> Listener | None:
    """``progress=`` of learn, sample and effects as a Listener: None (no events), a
    Listener, or a callable(stage, done, total). Anything else is an OptionError."""
    if progress is None or isinstance(progress, Listener):
        return progress
    if callable(progress):
        return _Call(progress)
    raise OptionError(f"progress must be a callable(stage, done, total) or a bigbn.engine.progress.Listener, "
                      f"got {type(progress).__name__}")


def report(to: Listener | None, stage: str, done: int, total: int) -> None:
    """Send ``ProgressEvent(stage, done, total)`` to ``to`` (nothing when None)."""
    if to is not None:
        to.on_progress(ProgressEvent(stage, int(done), int(total)))


def reporter(progress) -> Callable[[str, int, int], None] | None:
    """``progress=`` (as for `listener`) as the function a stage calls, ``tick(stage,
    done, total)``, which sends the ProgressEvent; None for no progress."""
    to = listener(progress)
    return None if to is None else functools.partial(report, to)
