"""Which device a run trains on (needs torch).

Every trainer (:func:`~fitting.training.train`,
:func:`~fitting.training.train_batched`, :func:`~fitting.training.train_grid`,
:func:`~fitting.training.train_network_sweep`) and the live network take
``device=``: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a
:class:`torch.device`. The models, their data and their optimiser state live
there; the initial parameters are still drawn on the CPU (with the run's
``torch.Generator``, so a run starts from the same numbers on every device)
and then moved, and only what is recorded (the token embedding's rows, the
per-run losses and accuracies) is copied back to the CPU.

The default, ``device=None``, is the environment variable ``EMBDYN_DEVICE``
of the process that trains, or the CPU when it is unset or empty: a worker
process (for example a Dask worker started with ``EMBDYN_DEVICE=cuda:1``)
trains on its own device without the caller naming it.
"""

from __future__ import annotations

import os
from typing import Any

import torch

__all__ = ["DEVICE_ENV", "available_devices", "check_device", "check_device_dtype", "device_arg", "STACK_FLOAT64"]

#: the environment variable that names a process's default device
DEVICE_ENV = "EMBDYN_DEVICE"

#: device types a run may use
DEVICE_TYPES = ("cpu", "cuda", "mps")

#: why a stacked trainer (grid, network sweep) needs float64 on its device, whatever the config's dtype
STACK_FLOAT64 = "the stacked trainer keeps every run's learning rates and weight decays in float64"


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def available_devices() -> list[str]:
    """The devices this process can train on.

    Returns
    -------
    list of str
        ``"cpu"`` always, then ``"cuda:0"``, ``"cuda:1"``, ... for every
        CUDA device torch sees, then ``"mps"`` where Apple's Metal backend
        is available.

    Examples
    --------
    >>> available_devices()[0]
    'cpu'
    """
    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if _mps_available():
        found.append("mps")
    return found


def _available(device: torch.device) -> bool:
    """Whether ``device`` is one this process has."""
    if device.type == "cpu":
        return device.index in (None, 0)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return False
        count = torch.cuda.device_count()
        return count > 0 if device.index is None else device.index < count
    if device.type == "mps":
        return device.index in (None, 0) and _mps_available()
    return False


def _parse(device: Any, name: str) -> tuple[torch.device, str]:
    """``device`` (None: this process's default) as a torch.device, and where a None came from (for the
    messages); the name is parsed, not checked against this machine's devices."""
    source = ""
    if device is None:
        device = os.environ.get(DEVICE_ENV) or "cpu"
        source = f" (from the environment variable {DEVICE_ENV})" if os.environ.get(DEVICE_ENV) else ""
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name} must be a device name such as 'cpu' or 'cuda:1', a torch.device or None, "
                        f"got {type(device).__name__}")
    parsed = device
    if isinstance(device, str):
        try:
            parsed = torch.device(device)
        except (RuntimeError, ValueError):
            parsed = None
    if parsed is None:
        have = ", ".join(repr(d) for d in available_devices())
        raise ValueError(f"{name} must name a device such as 'cpu', 'cuda', 'cuda:1' or 'mps' (this machine has "
                         f"{have}), got {str(device)!r}{source}")
    return parsed, source


def check_device(device: str | torch.device | None = None, name: str = "device") -> torch.device:
    """``device`` checked against the devices this process has.

    Parameters
    ----------
    device : str, torch.device or None
        ``"cpu"``, ``"cuda"`` (the current CUDA device), ``"cuda:<index>"``,
        ``"mps"``, or a :class:`torch.device` of one of them. None is the
        process's default: the environment variable ``EMBDYN_DEVICE`` when it
        is set and not empty, else ``"cpu"``. The variable is read where the
        run trains, so a worker process started with ``EMBDYN_DEVICE=cuda:1``
        (a Dask worker, say) trains on that GPU when the caller passes None.
    name : str
        The parameter's name in the messages.

    Returns
    -------
    torch.device
        ``torch.device("cpu")`` for any name of the CPU.

    Raises
    ------
    TypeError
        ``device`` is neither None, a str nor a torch.device.
    ValueError
        naming ``name``, the value and the devices this process has, when
        ``device`` does not parse as a device name (``"gpu"``, ``"cuda:x"``,
        ``""``), is of another type than cpu, cuda or mps, or is not on this
        machine (``"cuda:3"`` with fewer GPUs, ``"mps"`` off a Mac).

    Examples
    --------
    >>> check_device("cpu")
    device(type='cpu')
    """
    parsed, source = _parse(device, name)
    if not _available(parsed):
        have = ", ".join(repr(d) for d in available_devices())
        raise ValueError(f"{name} must be one of the devices this machine has ({have}), got {str(parsed)!r}{source}")
    return torch.device("cpu") if parsed.type == "cpu" else parsed


def device_arg(device: Any, name: str = "device", *, here: bool = True, dtype: str | None = None,
               why: str = "") -> str | None:
    """``device`` checked before a run is handed to worker processes, and the
    value they get: None stays None (each worker's own ``EMBDYN_DEVICE``
    decides), a name or a torch.device becomes its name.

    With ``here`` (the workers run on this machine) the device must be one
    of this machine's (:func:`check_device`) and hold ``dtype``
    (:func:`check_device_dtype`, with ``why``); without (the workers are a
    cluster's) only the name is checked here and each worker checks that it
    has the device."""
    if device is None and not here:  # each worker's own EMBDYN_DEVICE decides, not this process's
        return None
    if here:
        checked = check_device(device, name)
        check_device_dtype(checked, dtype, name, why=why)
    else:
        checked, source = _parse(device, name)
        if checked.type not in DEVICE_TYPES:
            raise ValueError(f"{name} must be a device of type {', '.join(map(repr, DEVICE_TYPES))}, got "
                             f"{str(checked)!r}{source}")
    return None if device is None else str(checked)


def check_device_dtype(device: torch.device, dtype: str | None, name: str = "device", *, why: str = "") -> None:
    """Refuse ``dtype`` ("float64" or "float32") on a device without it.

    Apple's MPS has no float64: a ValueError naming ``name``, before any
    work. ``why`` says what needs float64 when it is not the config's dtype
    (the stacked trainers keep per-run learning rates and weight decays in
    float64)."""
    if device.type == "mps" and dtype == "float64":
        fix = "train on the CPU or a CUDA device" if why else "train with dtype='float32' there, or on the CPU or " \
                                                              "a CUDA device"
        raise ValueError(f"{name} {str(device)!r} has no float64{' (' + why + ')' if why else ''}: {fix}")
