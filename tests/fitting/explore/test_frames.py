"""The explorer's binary frame: what encode_frame writes, decode_frame (and the page) reads back."""

import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fitting.explore.frames import MAGIC, decode_frame, encode_frame
from particles.core.io import json_safe

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
shapes = st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple)
floats32 = st.floats(allow_nan=False, allow_infinity=False, width=32)
headers = st.dictionaries(st.sampled_from(["step", "energy", "structure", "version", "é"]),
                          st.one_of(st.integers(-2 ** 40, 2 ** 40), st.floats(allow_nan=True), st.text(max_size=20),
                                    st.none(), st.booleans()), max_size=5)


@pytest.mark.slow
@settings(deadline=None, max_examples=150)
@given(headers, st.dictionaries(names, shapes.flatmap(lambda s: arrays(np.float64, s, elements=floats32)), max_size=4))
def test_round_trip(header, arrs):
    data = encode_frame(header, arrs)
    assert data[:4] == MAGIC
    (n,) = struct.unpack("<I", data[4:8])
    assert (8 + n) % 4 == 0  # float32 views need 4-byte alignment in the page
    back, out = decode_frame(data)
    assert back == json.loads(json.dumps(json_safe(header)))  # NaN and infinities arrive as null
    assert list(out) == [str(k) for k in arrs]
    for name, value in arrs.items():
        assert out[name].dtype == np.float32 and out[name].shape == value.shape
        np.testing.assert_array_equal(out[name], value.astype(np.float32))


def test_nan_becomes_null_and_order_is_kept():
    data = encode_frame({"energy": float("nan"), "x": np.float64(2.5), "k": np.int64(3)},
                        {"b": np.ones((2, 2)), "a": np.arange(3.0)})
    header, out = decode_frame(data)
    assert header == {"energy": None, "x": 2.5, "k": 3}
    assert list(out) == ["b", "a"]


@pytest.mark.parametrize("cut", [0, 3, 7, 9, -1])
def test_truncated_frames_are_refused(cut):
    data = encode_frame({"step": 1}, {"positions": np.ones((4, 2))})
    with pytest.raises(ValueError):
        decode_frame(data[:cut] if cut >= 0 else data + b"\0\0\0\0")


def test_bad_arguments():
    with pytest.raises(ValueError, match="reserved"):
        encode_frame({"arrays": 1}, {})
    with pytest.raises(TypeError, match="bytes"):
        decode_frame("EDF1")
    with pytest.raises(ValueError, match="magic"):
        decode_frame(b"XXXX\0\0\0\0")
