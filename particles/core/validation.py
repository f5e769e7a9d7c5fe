"""Input checks shared by every package of the distribution.

Each check takes the value and the parameter's name, and either returns the
value in its normal form (an int, a float, a float64 array, ...) or raises
a ``ValueError``/``TypeError`` whose message names the parameter, says what
is accepted and shows what was given. Public entry points call them before
any work. ``particles`` imports nothing of ours, so the checks live here and
``effective_theory`` and ``fitting`` import them from ``particles.core.validation``.

Conventions:

* ``TypeError`` for the wrong kind of object (a string where a number goes,
  complex or object arrays, None where a value is required); ``ValueError``
  for a value of the right kind outside its range (NaN, a negative size,
  a wrong shape).
* bools are not accepted as numbers, and complex input is refused, never
  cast (casting would silently drop the imaginary part).
* ranges are closed unless ``strict``; ``high=None`` means unbounded.
* real values (scalars and finite-checked arrays) have magnitude at most
  ``MAX_ABS`` = 1e100, so that squares and products stay finite.
"""

from __future__ import annotations

import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np

#: largest magnitude a real input may have: squares and products of values
#: up to 1e100 stay finite in float64 (1e300 is not far from overflow), so
#: a larger input is refused by name instead of giving inf or NaN later
MAX_ABS = 1e100

__all__ = ["MAX_ABS", "check_replace", "check_int", "check_float", "check_bool", "check_choice", "check_array", "check_magnitude",
           "check_path", "check_output_folder",
           "describe", "check_seeds", "check_float_list", "check_nonnegative"]


def describe(value: Any) -> str:
    """A short description of ``value`` for error messages (arrays by dtype
    and shape, long reprs cut)."""
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _range_text(low, high, strict: bool) -> str:
    lo = ">" if strict else ">="
    if low is not None and high is not None:
        return f"in ({low}, {high})" if strict else f"in [{low}, {high}]"
    if low is not None:
        return f"{lo} {low}"
    if high is not None:
        return f"{'<' if strict else '<='} {high}"
    return ""


def check_replace(changes: Any, accepted: Collection[str], what: str) -> None:
    """The one rule of every ``replace(**changes)`` of the package: names
    outside ``accepted`` are a ValueError listing them and what is accepted
    (``what`` says what the names are, e.g. "ForceParams field(s)")."""
    unknown = sorted(set(changes) - set(accepted))
    if unknown:
        raise ValueError(f"unknown {what}: {unknown}; accepted: {sorted(accepted)}")


def check_int(value: Any, name: str, low: int | None = None, high: int | None = None, *,
              allow_none: bool = False, unit: str = "") -> int | None:
    """``value`` as a Python int in [low, high] (None when ``allow_none``).

    Integral floats are refused too (``steps=1e3`` is a float); NumPy
    integers are accepted. ``unit`` follows the range in the message
    (e.g. ``" (samples)"``).
    """
    if value is None and allow_none:
        return None
    what = f"an int {_range_text(low, high, False)}".rstrip() + unit
    if allow_none:
        what = "None or " + what
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {what}, got {describe(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


def check_float(value: Any, name: str, low: float | None = None, high: float | None = None, *,
                strict: bool = False, allow_none: bool = False, allow_inf: bool = False) -> float | None:
    """``value`` as a finite Python float in [low, high] (open with
    ``strict``; None when ``allow_none``; +-inf when ``allow_inf``)."""
    if value is None and allow_none:
        return None
    what = f"a {'' if allow_inf else 'finite '}number {_range_text(low, high, strict)}".rstrip()
    if allow_none:
        what = "None or " + what
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be {what}, got {describe(value)}")
    try:
        v = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be {what}, got an int too large for a float") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if math.isfinite(v) and abs(v) > MAX_ABS:
        raise ValueError(f"{name} must be {what} of magnitude <= {MAX_ABS:g} (larger values overflow float64 "
                         f"in products), got {value!r}")
    if low is not None and (v <= low if strict else v < low):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if high is not None and (v >= high if strict else v > high):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return v


def check_seeds(value: Any, name: str = "seeds", *, count: bool = False, distinct: bool = True) -> list[int]:
    """``value`` as a non-empty list of ints >= 0 (distinct, unless
    ``distinct=False``); with ``count`` an int n >= 1 also stands for the
    seeds 0 .. n - 1."""
    what = f"a non-empty list of {'distinct ' if distinct else ''}ints >= 0" + (" or a count >= 1" if count else "")
    if count and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value < 1:
            raise ValueError(f"{name} must be {what}, got {value!r}")
        return list(range(int(value)))
    if isinstance(value, (str, bytes, dict, bool, np.bool_)) or not hasattr(value, "__iter__") or np.ndim(value) > 1:
        raise TypeError(f"{name} must be {what}, got {describe(value)}")
    seeds = [check_int(s, name, 0) for s in value]
    if not seeds:
        raise ValueError(f"{name} must be {what}, got an empty one")
    if distinct and len(set(seeds)) != len(seeds):
        raise ValueError(f"{name} must be {what}: {sorted(s for s in set(seeds) if seeds.count(s) > 1)} repeat")
    return seeds


def check_nonnegative(value: Any, name: str, *, strict: bool = False) -> float:
    """``value`` as a finite float >= 0 (> 0 with ``strict``) of magnitude at
    most ``MAX_ABS``, in the words of the physical parameters: "dt must be >
    0 and finite (at most 1e+100), got -1.0"."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (strict and value == 0) or value > MAX_ABS:
        raise ValueError(f"{name} must be {'> 0' if strict else '>= 0'} and finite (at most {MAX_ABS:g}), got {value}")
    return value


def check_float_list(value: Any, name: str, low: float | None = None, *, distinct: bool = False) -> list[float]:
    """``value`` as a non-empty list of finite floats >= ``low`` (distinct
    with ``distinct``)."""
    what = f"a non-empty list of {'distinct ' if distinct else ''}numbers {_range_text(low, None, False)}".rstrip()
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__") or np.ndim(value) > 1:
        raise TypeError(f"{name} must be {what}, got {describe(value)}")
    out = [check_float(v, name, low) for v in value]
    if not out:
        raise ValueError(f"{name} must be {what}, got an empty one")
    if distinct and len(set(out)) != len(out):
        raise ValueError(f"{name} must be {what}: {sorted(v for v in set(out) if out.count(v) > 1)} repeat")
    return out


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a bool (Python or NumPy bool only; 0/1 and strings are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {describe(value)}")
    return bool(value)


def check_choice(value: Any, name: str, choices: Collection[Any]) -> Any:
    """The entry of ``choices`` equal to ``value``. Strings match strings
    only and bools match bools only; an unknown value of a kind the choices
    have gives a ValueError, any other kind a TypeError."""
    options = list(choices)

    def kind(v):
        if isinstance(v, (str, np.str_)):
            return "str"
        if isinstance(v, (bool, np.bool_)):
            return "bool"
        if isinstance(v, (int, float, np.integer, np.floating)):
            return "number"
        return type(v)

    for option in options:
        if kind(value) == kind(option) and not isinstance(value, np.ndarray):
            try:
                if bool(value == option):
                    return option
            except (TypeError, ValueError):
                continue
    shown = ", ".join(repr(o) for o in options)
    same_kind = any(kind(value) == kind(o) for o in options)
    raise (ValueError if same_kind else TypeError)(f"{name} must be one of {shown}, got {describe(value)}")


def check_array(value: Any, name: str, *, ndim: int | Sequence[int] | None = None,
                shape: Sequence[int | None] | None = None, dtype: str = "float", finite: bool = True,
                bounded: bool = True, min_size: int = 0, low: float | None = None,
                high: float | None = None) -> np.ndarray:
    """``value`` as a NumPy array of the given kind, checked.

    Parameters
    ----------
    value : array_like
    name : str
        The parameter's name, for the message.
    ndim : int or sequence of int, optional
        Accepted numbers of dimensions.
    shape : sequence of (int or None), optional
        Required shape; None matches any length on that axis.
    dtype : {"float", "int", "bool", "number"}
        "float": real numbers, returned as float64; "int": integers (or
        integral floats), returned as int64; "bool": booleans; "number": real
        numbers, returned as given (int or float). Complex, object and string
        input is refused for all of them.
    finite : bool
        Refuse NaN and +-inf (float and number arrays).
    bounded : bool
        With ``finite``, also refuse magnitudes above ``MAX_ABS`` (inputs);
        False for derived quantities and outputs that need only be finite.
    min_size : int
        Fewest elements.
    low, high : float, optional
        Closed bounds on every element.
    """
    if value is None:
        raise TypeError(f"{name} must be an array, got None")
    if isinstance(value, (str, bytes, dict, set)):
        raise TypeError(f"{name} must be an array of numbers, got {describe(value)}")
    try:
        arr = np.asarray(value)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name} must be a rectangular array of numbers ({exc})") from None
    except TypeError as exc:
        raise TypeError(f"{name} must be an array of numbers ({exc})") from None
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} must be real; complex input is refused rather than cast, got dtype {arr.dtype}")
    if kind not in "biuf":
        raise TypeError(f"{name} must be an array of numbers, got dtype {arr.dtype}")
    if dtype == "bool":
        if kind != "b":
            raise TypeError(f"{name} must be a boolean array, got dtype {arr.dtype}")
    elif dtype == "int":
        if kind == "b":
            raise TypeError(f"{name} must be an integer array, got booleans")
        if kind == "f":
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} must hold finite integers, got NaN or inf")
            if not np.all(arr == np.round(arr)):
                raise ValueError(f"{name} must hold integers, got non-integral values")
        if arr.size and (kind in "fu") and (np.max(arr) > np.iinfo(np.int64).max
                                            or np.min(arr) < np.iinfo(np.int64).min):
            raise ValueError(f"{name} must hold integers within the int64 range, got {np.max(arr)!r}")
        arr = arr.astype(np.int64)
    elif dtype in ("float", "number"):
        if kind == "b":
            raise TypeError(f"{name} must be an array of numbers, got booleans")
        if dtype == "float":
            arr = arr.astype(np.float64)
    else:
        raise ValueError(f"dtype must be 'float', 'int', 'bool' or 'number', got {dtype!r}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must have {want} dimension{'s' if allowed != (1,) else ''}, "
                             f"got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = "(" + ", ".join("n" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} element{'s' if min_size != 1 else ''}, "
                         f"got {arr.size}")
    if finite and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} must be finite, got {bad} NaN or inf value{'s' if bad != 1 else ''}")
    if finite and bounded:
        check_magnitude(arr, name)
    if (low is not None or high is not None) and arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} must be a number in its range everywhere, got NaN")
    if low is not None and arr.size and np.min(arr) < low:
        raise ValueError(f"{name} must be >= {low} everywhere, got a minimum of {np.min(arr)!r}")
    if high is not None and arr.size and np.max(arr) > high:
        raise ValueError(f"{name} must be <= {high} everywhere, got a maximum of {np.max(arr)!r}")
    return arr


def check_magnitude(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` (a finite float array, or a number) unchanged, or a ValueError
    naming ``name`` when a value's magnitude exceeds ``MAX_ABS``."""
    a = np.asarray(arr)
    if a.size and a.dtype.kind == "f":
        largest = max(float(np.max(a)), -float(np.min(a)))
        if largest > MAX_ABS:
            raise ValueError(f"{name} must hold values of magnitude <= {MAX_ABS:g} (larger ones overflow float64 "
                             f"in squares and products), got {largest:.3g}")
    return arr


def check_path(value: Any, name: str, *, must_exist: bool = False) -> Path:
    """``value`` as a ``pathlib.Path`` (a str or os.PathLike; open files and
    file descriptors are refused), existing when ``must_exist``."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {describe(value)}")
    path = Path(value)
    if str(value) == "":
        raise ValueError(f"{name} must be a non-empty path")
    if must_exist and not path.exists():
        raise FileNotFoundError(f"{name}: {str(path)!r} does not exist")
    return path


#: folders this process writes, and the open lock file that holds each (released when the process ends)
_HELD_FOLDERS: dict[tuple[str, str], Any] = {}


def check_output_folder(value: Any, name: str = "out", *, lock: str | None = "") -> Path:
    """Create the output folder ``value`` (with its parents), check that it
    takes a file and claim it for this process, before any work is done.

    Returns the folder as a ``pathlib.Path``. Raises a ``TypeError`` for a
    value that is not a path and a ``ValueError`` naming ``name`` when the
    path is an existing file, or the folder cannot be created or written
    (read-only file system, no permission), with the system's reason.

    One writer per folder: the folder is claimed with an advisory lock
    (``fcntl.flock`` on ``.embdyn-lock`` in it, held until the process ends,
    SIGKILL included) so that a second process writing the same folder is
    refused with a ``ValueError`` naming the folder and the process that
    holds it, instead of both overwriting each other's files. ``lock`` names
    the claim (``""``, the whole folder; a sweep shard claims only its own
    journal, so that shards can share a folder); ``None`` takes no lock. The
    same process may claim a folder again. Without ``fcntl`` (Windows) no
    lock is taken.

    The lock file is opened with ``O_NOFOLLOW`` and never truncated before
    it is checked: a symbolic link there, or anything but a regular file of
    one name holding nothing or a lock text (a file of the user's, a hard
    link, a FIFO), is refused with a ValueError naming it, and left as it
    is; the lock of a process that died is taken over. A ``value`` that is
    (or lies under) a symbolic link to nothing is a ValueError naming
    ``name`` and the link.
    """
    path = check_path(value, name)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} must be a folder (existing or new), but {str(path)!r} is a file")
    _refuse_dangling_link(path, name)
    try:
        path.mkdir(parents=True, exist_ok=True)
        # a probe file of its own (several processes may check one folder at once)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".embdyn-write-test-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ValueError(f"{name} must be a writable folder, but {str(path)!r} is not: {reason}") from None
    if lock is not None:
        _claim_folder(path, name, lock)
    return path


def _refuse_dangling_link(path: Path, name: str) -> None:
    """A ValueError naming ``name`` when ``path`` or one of its parents is a
    symbolic link to nothing (``mkdir`` would only say "File exists")."""
    for part in (path, *path.parents):
        if part.is_symlink() and not part.exists():
            raise ValueError(f"{name}: {str(part)!r} is a symbolic link to {os.readlink(part)!r}, which does not "
                             f"exist; create that folder, remove the link or choose another {name}")


#: what :func:`_claim_folder` writes into a lock file (an empty one is a lock file too)
_LOCK_TEXT = re.compile(r"process \d+ \(.*\)", re.S)
#: a lock file is never larger than this (the text above, cut to 120 characters of the command line)
_LOCK_MAX_BYTES = 1024


def _open_lock(lock_path: Path, name: str) -> int:
    """The lock file ``lock_path`` opened for reading and writing (created if
    missing), never through a symbolic link and never truncating anything:
    a symlink, or anything but a regular file of one name holding nothing or
    a lock text, is a ValueError naming the path. Returns the descriptor."""
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_CLOEXEC", 0))
    fix = f"remove it or choose another {name}"
    try:
        fd = os.open(lock_path, flags, 0o666)
    except OSError as exc:
        if lock_path.is_symlink():  # O_NOFOLLOW: ELOOP (EMLINK on some BSDs)
            raise ValueError(f"{name}: the lock file {str(lock_path)!r} is a symbolic link (to "
                             f"{os.readlink(lock_path)!r}), which is not followed; {fix}") from None
        raise ValueError(f"{name}: cannot create the lock file {str(lock_path)!r}: "
                         f"{exc.strerror or type(exc).__name__}") from None
    try:
        info = os.fstat(fd)
        what = None
        if not stat.S_ISREG(info.st_mode):
            what = "not a regular file"
        elif info.st_nlink != 1:
            what = f"a file with {info.st_nlink} names (a hard link)"
        elif info.st_size > _LOCK_MAX_BYTES:
            what = f"{info.st_size} bytes long"
        else:
            text = os.pread(fd, _LOCK_MAX_BYTES, 0).decode("utf-8", "replace").strip()
            if text and not _LOCK_TEXT.fullmatch(text):
                what = f"holding {text[:40]!r}"
        if what is not None:
            raise ValueError(f"{name}: {str(lock_path)!r} is not a lock file of embdyn ({what}) and is left as it "
                             f"is; {fix}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _claim_folder(path: Path, name: str, lock: str) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks
        return
    key = (str(path.resolve()), lock)
    if key in _HELD_FOLDERS:
        return
    lock_path = path / (".embdyn-lock" + (f"-{lock}" if lock else ""))
    fd = _open_lock(lock_path, name)
    fh = os.fdopen(fd, "r+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read(_LOCK_MAX_BYTES).strip() or "another process"
        fh.close()
        raise ValueError(f"{name}: the folder {str(path)!r} is being written by {holder}; wait for it to finish or "
                         f"choose another {name}") from None
    import sys

    # ours now (a lock left by a dead process is taken over): the same inode that was checked, truncated
    fh.seek(0)
    fh.truncate()
    fh.write(f"process {os.getpid()} ({' '.join(sys.argv[:3])[:120]})")
    fh.flush()
    _HELD_FOLDERS[key] = fh
