"""Atomic file writes shared by every package: a file is either the old one
or the complete new one, never half written, even when the process is
killed mid-save (temporaries of dead processes are cleaned up on the next
write to the folder)."""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

__all__ = ["atomic_write", "atomic_write_text", "remove_stale_temporaries", "process_alive", "umask", "json_safe",
           "json_default", "write_json", "json_loads_bounded", "MAX_JSON_DEPTH", "zip_members", "is_torch_checkpoint"]

#: JSON nested deeper than this is refused before parsing (Python's parser recurses once per level)
MAX_JSON_DEPTH = 64


def atomic_write(path: str | os.PathLike, write: Callable[[Any], Any], *, by_name: bool = False) -> Path:
    """Write a file atomically: ``write(fh)`` fills a temporary file in the
    same folder, which is synced and renamed over ``path``; on any error the
    temporary file is removed and ``path`` is untouched.

    ``by_name=True`` is for writers that open the file themselves (e.g. an
    animation writer): ``write`` then gets the temporary file's name, which
    ends in ``path``'s suffix."""
    path = Path(path)
    try:  # an OS error names the file the user asked for, not our temporary file
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.",
                                   suffix=".tmp" + (path.suffix if by_name else ""), dir=path.parent)
    except OSError as exc:
        raise type(exc)(exc.errno, f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        if by_name:
            os.close(fd)
            write(tmp)
            if os.path.getsize(tmp) == 0:  # the writer wrote elsewhere or nothing: keep the old file
                raise OSError(f"the writer left {tmp!r} empty; {str(path)!r} is unchanged")
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        else:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp creates 0600; give the file the usual mode
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if exc.errno is None:
            raise
        raise type(exc)(exc.errno, f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    data = text.encode()
    return atomic_write(path, lambda fh: fh.write(data))


#: temporary files of atomic_write: .<name>.<pid>.<random>.tmp
TEMPORARY = re.compile(r"^\..+\.(\d+)\.[a-z0-9_]{8}\.tmp(\.[A-Za-z0-9_-]+)?$")  # mkstemp: 8 random chars
#: temporaries without a process id (older versions) count as stale after this
_LEGACYTEMPORARY_AGE = 3600.0


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete the temporary files that killed saves left in ``folder``: those
    of :func:`atomic_write` whose process is gone (and, from older versions,
    ``.<name>.<random>.tmp`` files older than an hour). A save in progress in
    another live process is never touched. Returns the files removed."""
    removed = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        match = TEMPORARY.match(name)
        if not (match or (name.startswith(".") and name.endswith(".tmp"))):
            continue
        try:
            if match and int(match.group(1)) != os.getpid():
                stale = not process_alive(int(match.group(1)))
            elif not match:
                stale = time.time() - entry.stat().st_mtime > _LEGACYTEMPORARY_AGE
            else:
                stale = False
            if stale and entry.is_file():
                entry.unlink()
                removed.append(entry)
        except OSError:
            continue
    return removed


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def json_default(value: Any) -> Any:
    """The ``default=`` of ``json.dumps`` for every file the package writes:
    a NumPy scalar as the Python value it holds; anything else a TypeError
    naming its type."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def write_json(path: str | os.PathLike, data: Any, *, indent: int | None = 2, **options: Any) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (NumPy scalars as plain
    values, :func:`json_default`); ``options`` pass to ``json.dumps``."""
    import json

    return atomic_write_text(path, json.dumps(data, indent=indent, default=json_default, **options))


def json_safe(value: Any) -> Any:
    """``value`` for JSON: NumPy scalars and arrays as plain Python, tuples as lists, keys as
    strings, and NaN or infinities as None (JSON has no NaN)."""
    import math

    import numpy as np

    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text, strings skipped (no recursion)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    return deepest


def json_loads_bounded(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)``, refusing text nested deeper than ``max_depth``
    with a ``ValueError`` (the parser would otherwise raise RecursionError)
    before parsing. Raises ``json.JSONDecodeError`` (a ValueError) and
    ``UnicodeDecodeError`` as ``json.loads`` does."""
    import json

    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    depth = json_depth(text)
    if depth > max_depth:
        raise ValueError(f"JSON nested {depth} levels deep; at most {max_depth} are read")
    return json.loads(text)


def zip_members(path: str | os.PathLike) -> list[str] | None:
    """The member names of the zip archive at ``path`` (an ``.npz``, a
    ``torch.save`` file, ...), read from its directory: no member is
    opened, so nothing is decompressed or unpickled. None when the file is
    not a readable zip archive."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return archive.namelist()
    except Exception:  # BadZipFile, OSError, ValueError, ...: not ours to describe
        return None


def is_torch_checkpoint(members: list[str]) -> bool:
    """Whether zip member names (:func:`zip_members`) are those of a
    ``torch.save`` file: a ``data.pkl`` or ``version`` record, at the top or
    in the archive's folder (``model/data.pkl``). An ``.npz`` holds only
    ``<name>.npy`` members, so it never qualifies."""
    return any(name.count("/") <= 1 and name.rsplit("/", 1)[-1] in ("data.pkl", "version") for name in members)
