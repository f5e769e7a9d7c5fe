"""The skeleton every trainer runs on: checkpoints, the step loop and what
happens when a run is interrupted.

A trainer supplies one ``step(t, progress)`` function (one optimiser step
with its recording; it sets ``progress.consistent = False`` before it starts
changing the parameters) and the states to save; :func:`run_steps` does the
rest the same way for the single-run, batched and grid trainers (the
network sweep, which keeps no checkpoints, has a loop of its own):

* a checkpoint every ``checkpoint_every`` steps (:class:`Checkpoint`: one
  file, written atomically, with the run's identity so that a checkpoint of
  another run is refused on resume);
* the callback ``callback(done, total)`` after every step;
* on an interruption (any exception, Ctrl-C included) ``on_stop(done, exc)``
  (e.g. write the partial trajectories) and, when the parameters are not in
  the middle of an update, a last checkpoint, so that ``resume=True`` continues
  to the same result as an uninterrupted run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from particles.core.io import atomic_write
from particles.core.validation import check_int

__all__ = ["Checkpoint", "CheckpointError", "CheckpointEntryError", "Progress", "run_steps", "check_checkpointing",
           "read_torch_file"]


def check_checkpointing(checkpoint_every: Any, resume: Any, out: Any, what: str = "an output path (out=...)"
                        ) -> int | None:
    """``checkpoint_every`` (None or an int >= 1) checked, and that it and
    ``resume`` come with an output location ``out``."""
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                         or checkpoint_every < 1):
        raise ValueError(f"checkpoint_every must be None or an int >= 1, got {checkpoint_every!r}")
    if (checkpoint_every or resume) and out is None:
        raise ValueError(f"checkpoint_every and resume need {what}")
    return checkpoint_every


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used: empty, truncated, damaged, not
    a ``torch.save`` file, holding objects that ``weights_only`` loading
    refuses (a foreign or hostile pickle), without the entries a run needs,
    or of another run. The message names the file and what is wrong."""


class CheckpointEntryError(CheckpointError, KeyError):
    """A checkpoint without the entry asked for: a :class:`CheckpointError`,
    and a KeyError as before."""

    __str__ = BaseException.__str__  # the message as given, not KeyError's quoted repr


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 100 else text[:97] + "..."


def read_torch_file(path: str | os.PathLike, what: str = "checkpoint") -> Any:
    """``torch.load(path, weights_only=True)`` on the CPU, with every way a
    file can be unusable refused by a :class:`CheckpointError` naming
    ``what`` and the file: empty, a folder, truncated or damaged, not a
    ``torch.save`` file, or holding objects other than tensors, numbers,
    strings, lists and dicts (a pickle of a foreign class, or a hostile one:
    nothing in it is run). A file that cannot be opened is an OSError."""
    import pickle
    import re
    import warnings

    import torch

    path = Path(path)
    name = f"{what} {str(path)!r}"
    if path.is_dir():
        raise CheckpointError(f"{name} is a folder, not a file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{name} is empty (a save cut short?); delete it to start afresh")
    try:
        with warnings.catch_warnings():  # torch's note on a plain pickle's protocol: the refusal says more
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        refused = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if refused:
            raise CheckpointError(f"{name} refers to {refused[1]}, which loading with weights_only=True refuses (only "
                                  "tensors, numbers, strings, lists and dicts are read): a foreign or hostile file, "
                                  "not a checkpoint of embdyn") from None
        raise CheckpointError(f"{name} is damaged or not a torch.save file (its pickle does not parse)") from None
    except (OSError, MemoryError):
        raise
    except Exception as exc:  # EOFError, RuntimeError of the zip reader, ValueError, ...: the file, not us
        raise CheckpointError(f"{name} is truncated, damaged or not a torch.save file ({type(exc).__name__}: "
                              f"{_first_line(exc)})") from None


class Checkpoint:
    """One checkpoint file of a run.

    Parameters
    ----------
    path : path or None
        Where the checkpoint lives (None: the run keeps no checkpoint).
    identity : dict
        What the run is (config, seeds, options); saved with every state
        and compared on :meth:`load`.
    kind : str
        The run's kind in the refusal message ("run", "batched run", ...).
    same : callable(saved identity) -> bool, optional
        How a saved identity is compared (default: equal to ``identity``).
    """

    def __init__(self, path: str | os.PathLike | None, identity: dict, kind: str = "run",
                 same: Callable[[dict], bool] | None = None, keys: tuple[str, ...] = ()):
        self.path = None if path is None else Path(path)
        self.identity = identity
        self.kind = kind
        self.same = same if same is not None else (lambda saved: saved == identity)
        self.keys = tuple(keys)

    def load(self) -> dict | None:
        """The saved state (a dict of what :meth:`save` was given), or None
        without a checkpoint. A :class:`CheckpointError` (a ValueError)
        naming the file when it cannot be read (:func:`read_torch_file`), is
        not a dict with the identity and the entries ``keys``, or belongs to
        another run."""
        if self.path is None or not self.path.exists():
            return None
        state = read_torch_file(self.path)
        name = f"checkpoint {str(self.path)!r}"
        if not isinstance(state, dict):
            raise CheckpointError(f"{name} holds a {type(state).__name__}, not the state of a {self.kind} (a dict)")
        missing = [key for key in ("identity", *self.keys) if key not in state]
        if missing:
            raise CheckpointError(f"{name} is not the state of a {self.kind}: entries {missing} are missing "
                                  f"(it has {sorted(map(str, state))[:8]})")
        try:
            same = isinstance(state["identity"], dict) and self.same(state["identity"])
        except Exception:  # an identity of another shape
            same = False
        if not same:
            raise CheckpointError(f"{name} belongs to another {self.kind}: {state['identity']} instead of "
                                  f"{self.identity}")
        return state

    def restore(self, apply: Callable[[dict], Any], state: dict) -> Any:
        """``apply(state)`` (putting a loaded state into the run's objects);
        a state whose entries do not fit (wrong shapes, types or names) is a
        :class:`CheckpointError` naming the file instead of the error deep
        in torch or NumPy."""
        try:
            return apply(state)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
            raise CheckpointError(f"checkpoint {str(self.path)!r} does not fit this {self.kind} "
                                  f"({type(exc).__name__}: {_first_line(exc)}); delete it to start afresh") from None

    def save(self, state: dict) -> None:
        """Write ``state`` (tensors, arrays as tensors, numbers) with the identity, atomically."""
        import torch

        full = {"identity": self.identity, **state}
        atomic_write(self.path, lambda fh: torch.save(full, fh))

    def remove(self) -> None:
        if self.path is not None and self.path.exists():
            self.path.unlink()


@dataclass
class Progress:
    """Where a run is: ``done`` steps finished; ``consistent`` is False
    while a step is changing the parameters (no checkpoint then)."""

    done: int
    consistent: bool = True


def run_steps(start: int, total: int, step: Callable[[int, Progress], None], *,
              save: Callable[[int], None] | None = None, checkpoint_every: int | None = None,
              callback: Callable[[int, int], None] | None = None,
              on_stop: Callable[[int, BaseException], None] | None = None,
              running: Callable[[], bool] | None = None, finish: Callable[[int], None] | None = None) -> int:
    """Run ``step(t, progress)`` for t = start .. total - 1 (while
    ``running()``, when given), then ``finish(done)`` (e.g. the final
    snapshot), and return the steps done.

    ``save(done)`` writes a checkpoint: every ``checkpoint_every`` steps
    (not after the last one) and, after an interruption between steps or
    in ``finish``, once more; ``on_stop(done, exc)`` runs first on an
    interruption, then the exception goes on.
    """
    check_int(start, "start", 0)
    progress = Progress(start)
    try:
        t = start
        while t < total and (running is None or running()):
            step(t, progress)
            t += 1
            progress.done = t
            progress.consistent = True
            if save is not None and checkpoint_every and t % checkpoint_every == 0 and t < total \
                    and (running is None or running()):
                save(t)
            if callback is not None:
                callback(t, total)
        if finish is not None:
            finish(progress.done)
    except BaseException as exc:
        if on_stop is not None:
            on_stop(progress.done, exc)
        if save is not None and checkpoint_every and progress.consistent and progress.done > start:
            save(progress.done)  # an interruption between steps keeps its progress
        raise
    return progress.done
