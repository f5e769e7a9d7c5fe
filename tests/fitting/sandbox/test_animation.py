"""The sandbox's animation (fitting.sandbox.animation): a GIF of the frames
over the recorded steps, its checks made before any drawing, and the MP4
refusal without ffmpeg; on synthetic layer states (no torch)."""

from __future__ import annotations

import pytest
from matplotlib import animation
from PIL import Image, ImageSequence

import fitting.sandbox.animation as anim
from fitting.sandbox.animation import GIF_WRITER, MP4_WRITER, animate, check_encoder
from fitting.sandbox.frame import FRAME_DPI, FRAME_SIZE

from .test_frame import synthetic_layers

SMALL = ("token_embedding", "sequence", "logits", "regions_sequence")


@pytest.fixture
def layers():
    return synthetic_layers(p=3, T=4, B=18, S=4, states=SMALL)


@pytest.fixture
def no_drawing(monkeypatch):
    """Fail the test when a frame is built (the checks come before any drawing)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a frame was drawn before the checks")
    monkeypatch.setattr(anim, "FrameDrawer", refuse)


def test_gif_has_one_frame_per_step(layers, tmp_path):
    out = tmp_path / "run.gif"
    calls = []
    used = animate(layers, out, steps=[0, 20, 30], fps=5, progress=lambda done, total: calls.append((done, total)))
    assert used == GIF_WRITER == "gif (Pillow)"
    assert calls == [(1, 3), (2, 3), (3, 3)]
    with Image.open(out) as im:
        frames = [f.copy() for f in ImageSequence.Iterator(im)]
        assert len(frames) == 3
        assert im.size == (int(FRAME_SIZE[0] * FRAME_DPI), int(FRAME_SIZE[1] * FRAME_DPI))
        assert im.info.get("duration") == 200  # 5 frames a second


def test_gif_defaults_to_every_recorded_step(tmp_path):
    layers = synthetic_layers(p=2, T=3, B=8, S=3, states=("sequence", "logits"), curves=False)
    out = tmp_path / "all.gif"
    animate(layers, str(out))
    with Image.open(out) as im:
        assert sum(1 for _ in ImageSequence.Iterator(im)) == 3


@pytest.mark.parametrize("name", ["run.png", "run", "run.gif.txt"])
def test_bad_suffix_is_refused_before_drawing(layers, tmp_path, no_drawing, name):
    with pytest.raises(ValueError, match=r"path .*must end in \.gif or \.mp4"):
        animate(layers, tmp_path / name)
    assert not (tmp_path / name).exists()


def test_missing_folder_is_refused_before_drawing(layers, tmp_path, no_drawing):
    path = tmp_path / "nowhere" / "run.gif"
    with pytest.raises(ValueError, match=r"path .*run\.gif.*does not exist"):
        animate(layers, path)
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        animate(layers, 3)


@pytest.mark.parametrize("fps, error", [(0, ValueError), (61, ValueError), (8.0, TypeError), (True, TypeError)])
def test_fps_is_checked_before_drawing(layers, tmp_path, no_drawing, fps, error):
    with pytest.raises(error, match="fps must be an int"):
        animate(layers, tmp_path / "run.gif", fps=fps)


def test_steps_are_checked_before_drawing(layers, tmp_path, no_drawing):
    with pytest.raises(ValueError, match=r"step 25 was not recorded.*nearest recorded steps are 20, 30"):
        animate(layers, tmp_path / "run.gif", steps=[0, 25])
    with pytest.raises(ValueError, match="at least one recorded step"):
        animate(layers, tmp_path / "run.gif", steps=[])
    with pytest.raises(TypeError, match="steps must be None or a sequence"):
        animate(layers, tmp_path / "run.gif", steps=10)
    with pytest.raises(TypeError, match="progress must be None or a function"):
        animate(layers, tmp_path / "run.gif", progress="yes")
    with pytest.raises(TypeError, match="layers must be"):
        animate(object(), tmp_path / "run.gif")


def test_mp4_without_ffmpeg_says_to_use_gif(layers, tmp_path, no_drawing, monkeypatch):
    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    with pytest.raises(ValueError, match=r"no MP4 encoder is present.*\.gif"):
        animate(layers, tmp_path / "run.mp4")
    assert not (tmp_path / "run.mp4").exists()
    with pytest.raises(ValueError, match="no MP4 encoder is present"):
        check_encoder("run.mp4")
    monkeypatch.setattr(animation.writers, "is_available", lambda name: True)
    assert check_encoder("run.MP4") == MP4_WRITER and check_encoder("run.gif") == GIF_WRITER
    with pytest.raises(ValueError, match="must end in .gif or .mp4"):
        check_encoder("run.avi")


@pytest.mark.ffmpeg  # deselected by default; .ci/run installs ffmpeg and runs it
def test_mp4_with_ffmpeg(layers, tmp_path):
    out = tmp_path / "run.mp4"
    assert animate(layers, out, steps=[0, 10]) == "mp4 (ffmpeg)"
    assert out.stat().st_size > 0
