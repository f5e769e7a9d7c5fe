"""The binary frame the explorer sends to the page: a JSON header and float32 arrays.

Layout (little-endian)::

    bytes 0-3   b"EDF1"
    bytes 4-7   uint32 n, the header's length in bytes
    bytes 8-    the header, UTF-8 JSON, padded with spaces so that 8 + n is a multiple of 4
    then        each array of header["arrays"] in order, float32, C order

``header["arrays"]`` lists ``[name, shape]`` pairs. The page decodes a frame
with one ``DataView`` and a ``Float32Array`` view per array, no copy.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Mapping

import numpy as np

from particles.core.io import json_safe

__all__ = ["MAGIC", "encode_frame", "decode_frame"]

MAGIC = b"EDF1"


def encode_frame(header: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> bytes:
    """One frame: ``header`` (JSON-serialisable; NaN becomes null) and ``arrays`` as float32.

    Parameters
    ----------
    header : mapping
        Scalars of the frame (step, energy, structure, ...). The key ``"arrays"`` is reserved.
    arrays : mapping of str to array_like
        Each array is sent as float32 in C order with its shape.

    Returns
    -------
    bytes
    """
    if "arrays" in header:
        raise ValueError("header must not have the key 'arrays': it is reserved for the array list")
    blocks = []
    listing = []
    for name, value in arrays.items():
        arr = np.ascontiguousarray(value, dtype="<f4")
        listing.append([str(name), list(arr.shape)])
        blocks.append(arr.tobytes())
    text = json.dumps(json_safe({**header, "arrays": listing}), allow_nan=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 4)
    return b"".join([MAGIC, struct.pack("<I", len(text)), text, *blocks])


def decode_frame(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The inverse of :func:`encode_frame`: ``(header, arrays)`` (arrays as float32).

    Raises
    ------
    ValueError
        When ``data`` is not a whole frame.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < 8 or data[:4] != MAGIC:
        raise ValueError("data is not an explorer frame (no EDF1 magic)")
    (n,) = struct.unpack("<I", data[4:8])
    if 8 + n > len(data) or (8 + n) % 4:
        raise ValueError(f"data holds a header of {n} bytes that does not fit in {len(data)} bytes")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    listing = header.pop("arrays")
    offset = 8 + n
    arrays = {}
    for name, shape in listing:
        size = int(np.prod(shape, dtype=np.int64))
        end = offset + 4 * size
        if end > len(data):
            raise ValueError(f"data ends inside array {name!r}")
        arrays[name] = np.frombuffer(data, dtype="<f4", count=size, offset=offset).reshape(shape)
        offset = end
    if offset != len(data):
        raise ValueError(f"data has {len(data) - offset} bytes after its last array")
    return header, arrays
