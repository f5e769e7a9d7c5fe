"""Fourier signals of token embeddings and which circles survive (docs/fitting.md, signals).

The signal of frequency k is the norm of the discrete Fourier transform of
the embedding over the token axis, F_k = sum_n exp(-2 pi i k n / p) E_n, a
vector in C^d. Frequencies k and p - k describe the same circle (for a real
embedding ``|F_k| == |F_{p-k}|``), so the signals reported are those of
k = 1..(p-1)//2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.metrics import circularity
from particles.trajectory import Trajectory
from particles.core.validation import check_array, check_choice, check_float, check_int, check_magnitude

__all__ = [
    "fourier_signals",
    "trajectory_signals",
    "surviving_frequencies",
    "frequency_circularity",
    "n_frequencies",
    "DC_SCALAR",
]

#: name of the per-step scalar series in which exporters store the DC signal S_0
DC_SCALAR = "signal_dc"


def n_frequencies(p: int) -> int:
    """Number K = (p - 1) // 2 of distinct non-DC frequencies for p tokens
    (p an int >= 1)."""
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"p must be an int >= 1, got {type(p).__name__}")
    if p < 1:
        raise ValueError(f"p must be an int >= 1, got {p}")
    return (int(p) - 1) // 2


def _check_power(power: Any) -> int:
    if isinstance(power, bool) or power not in (1, 2):
        raise ValueError(f"power must be 1 (|F_k|) or 2 (|F_k|^2), got {power!r}")
    return int(power)


def _recorded_p(traj: Trajectory) -> int | None:
    """The token count a trajectory's metadata records (``meta["p"]``, as
    every writer of the package stores it), or None when it records none."""
    p = traj.meta.get("p")
    return int(p) if isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)) else None


def _check_token_axis(shape: tuple[int, ...], p: int, label: str, source: str) -> None:
    """Refuse embeddings ``label`` of ``shape`` whose token axis (the one
    before last) does not hold ``p`` rows (``source`` says where p comes
    from), suggesting the transpose when the last axis does."""
    if shape[-2] == p:
        return
    axis = len(shape) - 2
    message = f"{label} has shape {shape}: its token axis (axis {axis}) has {shape[-2]} entries, but {source}"
    if shape[-1] == p:
        swap = f"{label}.T" if len(shape) == 2 else f"np.swapaxes({label}, {axis}, {axis + 1})"
        layout = "(d, p) where (p, d)" if len(shape) == 2 else "(T, d, p) where (T, p, d)"
        fix = f"build the Trajectory from {swap}" if label.endswith(".embeddings") else f"pass {swap}"
        message += f"; its last axis has {p}, so it looks transposed, {layout} is expected: {fix}"
    else:
        message += "; embeddings are (p, d) or (T, p, d), token n in row n"
    raise ValueError(message)


def _embedding_stack(E: Any, name: str = "E", p: Any = None) -> np.ndarray:
    """The embeddings of ``E`` (an array (p, d) or (T, p, d), or a
    Trajectory's snapshots) as float64, refused when their token axis
    contradicts ``p`` (given, or for a Trajectory recorded in its metadata).
    Without a p nothing is guessed: axis -2 is the token axis."""
    if p is not None:
        p = check_int(p, "p", 2)
    if isinstance(E, Trajectory):
        recorded = _recorded_p(E)
        if recorded is not None:
            _check_token_axis(E.embeddings.shape, recorded, f"{name}.embeddings",
                              f"the trajectory's meta records p = {recorded}")
        if p is not None:
            _check_token_axis(E.embeddings.shape, p, f"{name}.embeddings", f"p = {p}")
        return E.embeddings
    arr = np.asarray(E)
    if arr.dtype.kind not in "iuf":  # not complex, bool, timedelta64 (a numpy integer subtype), ...
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    if arr.ndim not in (2, 3):
        raise ValueError(f"{name} must have shape (p, d) or (T, p, d), got {arr.shape}")
    if p is not None:
        _check_token_axis(arr.shape, p, name, f"p = {p}")
    if arr.shape[-2] < 2 or arr.shape[-1] < 1:
        raise ValueError(f"{name} needs at least 2 tokens and 1 dimension, got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return check_magnitude(arr, name)


def fourier_signals(E: Any, power: int = 1, dc: bool = False, *, p: int | None = None) -> np.ndarray:
    """Fourier signal of each frequency of one embedding or a stack of them.

    Parameters
    ----------
    E : ndarray, shape (p, d) or (T, p, d), or Trajectory
        Token embeddings (row n is token n). A :class:`~particles.Trajectory`
        gives the signals of its embedding snapshots.
    power : {1, 2}
        1 gives S_k = ||F_k|| (the survival paper's code, the default),
        2 gives S_k = ||F_k||^2 (its text).
    dc : bool
        Prepend the DC signal S_0 (k = 0) as column 0.
    p : int >= 2, optional
        Number of tokens. When given (or, for a Trajectory, recorded in its
        ``meta["p"]``), embeddings whose token axis (axis -2) does not have
        p entries are refused, and the message suggests the transpose when
        the last axis has them. Without p nothing is guessed: axis -2 is the
        token axis whatever its length, so a transposed (d, p) array gives
        the signals of (d - 1) // 2 "frequencies" of the wrong axis.

    Returns
    -------
    ndarray, shape (K,) or (T, K), K = (p-1)//2 (+1 with ``dc``)
        Column j holds frequency k = j + 1 (k = j with ``dc``).

    Raises
    ------
    ValueError
        A token axis that contradicts ``p``, e.g. for ``E.T`` of a (97, 96)
        embedding with ``p=97``: "E has shape (96, 97): its token axis
        (axis 0) has 96 entries, but p = 97; its last axis has 97, so it
        looks transposed, (d, p) where (p, d) is expected: pass E.T".
    """
    power = _check_power(power)
    X = _embedding_stack(E, p=p)
    p = X.shape[-2]
    K = n_frequencies(p)
    if X.ndim == 2:
        S = _power_spectrum(X, K)
    else:  # snapshots in blocks: the transform's complex workspace stays near SPECTRUM_BLOCK_BYTES
        S = np.empty((X.shape[0], K + 1))
        rows = max(1, SPECTRUM_BLOCK_BYTES // max(1, 16 * p * X.shape[-1]))
        for i in range(0, X.shape[0], rows):
            S[i:i + rows] = _power_spectrum(X[i:i + rows], K)
    if power == 1:
        S = np.sqrt(S, out=S)
    return S if dc else S[..., 1:]


#: the most bytes of complex transform :func:`fourier_signals` holds at once (it works through a stack of
#: snapshots in blocks of this size, so its memory is its output plus about this much)
SPECTRUM_BLOCK_BYTES = 16 << 20


def _power_spectrum(X: np.ndarray, K: int) -> np.ndarray:
    """|F_k|^2 summed over the dimensions, k = 0..K, of (p, d) or (n, p, d) embeddings (float64)."""
    F = np.fft.fft(X, axis=-2)[..., : K + 1, :]  # (..., K+1, d)
    return np.sum(F.real**2 + F.imag**2, axis=-1)


def trajectory_signals(traj: Trajectory, power: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Signals of a trajectory and the steps at which they are sampled.

    Uses the stored per-step ``signals`` when the trajectory has them (they
    were computed with ``meta["signal_power"]``, default 1) and otherwise
    computes them from the embedding snapshots.

    Returns
    -------
    steps : ndarray of int, shape (T,)
    signals : ndarray, shape (T, K)

    Raises
    ------
    ValueError
        When the token count the trajectory records (``meta["p"]``, as every
        writer of the package stores it) contradicts its embeddings' token
        axis (axis 1; the message suggests the transpose when axis 2 has p
        entries), or when its stored signals do not have the (p - 1) // 2
        columns of its p tokens. A trajectory without ``meta["p"]`` is taken
        as it is: its embeddings are (S, p, d) by the file format.
    """
    if not isinstance(traj, Trajectory):
        raise TypeError(f"traj must be a particles.Trajectory, got {type(traj).__name__}")
    power = _check_power(power)
    _embedding_stack(traj, "traj")  # the recorded p against the token axis
    if traj.signals is not None and traj.signals.shape[1] != n_frequencies(traj.p):
        raise ValueError(f"traj.signals has {traj.signals.shape[1]} columns, but the trajectory's p = {traj.p} tokens "
                         f"have {n_frequencies(traj.p)} frequencies (k = 1..(p - 1) // 2): its stored signals were "
                         f"not computed over the token axis of its embeddings {traj.embeddings.shape}")
    if traj.signals is not None:
        stored = int(traj.meta.get("signal_power", 1))
        signals = traj.signals
        if stored != power:
            signals = signals**2 if power == 2 else np.sqrt(signals)
        return traj.steps, signals
    return traj.snapshot_steps, fourier_signals(traj.embeddings, power=power)


def surviving_frequencies(signals: Any, factor: float = 2.0, *, dc: Any = None, p: int | None = None,
                          output: str = "mask") -> np.ndarray:
    """Which frequencies survive, by the reference rule.

    A frequency survives when its final signal exceeds ``factor`` times the
    mean signal over all p bins, DC included. The half spectrum holds every
    non-DC bin twice (k and p - k have the same signal), so for odd p the
    mean is (S_0 + 2 sum_k S_k) / p.

    Parameters
    ----------
    signals : ndarray, shape (K,) or (T, K), or Trajectory
        Signals of k = 1..K; with a (T, K) array the last row is used.
        A Trajectory uses its final embedding snapshot (the exact rule).
    factor : float > 0
        Threshold factor (2 in the reference code).
    dc : float or ndarray of shape (T,)
        DC signal S_0 at the final step (last entry of an array is used).
        Required for arrays: ``fourier_signals(E, dc=True)[..., 0]`` or the
        trajectory scalar ``signal_dc`` of exported runs. Pass 0 to leave
        DC out of the mean on purpose.
    p : int, optional
        Number of tokens; defaults to 2 K + 1. An even p needs the Nyquist
        bin, which the half spectrum does not hold, and is refused.

    output : {"mask", "frequencies"}
        What to return: a boolean mask over the K signal columns (default),
        or the surviving frequencies k themselves (what ``embdyn fit``
        prints as ``survivors``).

    Returns
    -------
    ndarray of bool, shape (K,), or ndarray of int
        ``output="mask"``: ``True`` for surviving frequencies (column j is
        k = j + 1). ``output="frequencies"``: the surviving k in increasing
        order (``np.flatnonzero(mask) + 1``).

    Examples
    --------
    >>> surviving_frequencies(traj)                         # doctest: +SKIP
    array([False,  True, False, ..., False])
    >>> surviving_frequencies(traj, output="frequencies")   # doctest: +SKIP
    array([2, 17])
    """
    factor = check_float(factor, "factor", 0.0, strict=True)
    output = check_choice(output, "output", ("mask", "frequencies"))
    if isinstance(signals, Trajectory):
        _embedding_stack(signals, "signals")  # the recorded p against the token axis
        full = fourier_signals(signals.final, dc=True)
        final, dc_value, p = full[1:], float(full[0]), signals.p
    else:
        arr = check_array(signals, "signals", ndim=(1, 2))
        if arr.shape[-1] < 1 or arr.shape[0] < 1:  # (0, K): no step to take the last row of
            raise ValueError(f"signals must have shape (K,) or (T, K) with K >= 1 and T >= 1, got {arr.shape}")
        final = arr if arr.ndim == 1 else arr[-1]
        if dc is None:
            raise ValueError("dc is required with a signal array: the reference rule averages over all p bins "
                             "including DC (pass fourier_signals(E, dc=True)[..., 0], or 0 to leave it out)")
        dc_arr = check_array(dc, "dc", ndim=(0, 1), min_size=1, low=0.0)
        dc_value = float(dc_arr.reshape(-1)[-1])
        K = final.shape[0]
        p = 2 * K + 1 if p is None else p
        p = check_int(p, "p", 1)
        if n_frequencies(p) != K:
            raise ValueError(f"p must be an int with (p-1)//2 == {K} (the number of signal columns), got {p!r}")
        if p % 2 == 0:
            raise ValueError(f"p must be odd (an even p needs the Nyquist bin), got {p}")
    if not (np.all(np.isfinite(final)) and np.isfinite(dc_value)):
        raise ValueError("signals and dc must be finite")
    mean = (dc_value + 2.0 * float(np.sum(final))) / p
    mask = final > factor * mean
    return mask if output == "mask" else np.flatnonzero(mask) + 1


def frequency_circularity(E: Any) -> np.ndarray:
    """Circularity of every frequency k = 1..(p-1)//2 (the ``particles`` metric).

    Parameters
    ----------
    E : ndarray, shape (p, d) or (T, p, d), or Trajectory

    Returns
    -------
    ndarray, shape (K,) or (T, K)
    """
    X = _embedding_stack(E)
    if X.ndim == 2:
        return circularity(X)
    return np.stack([circularity(frame) for frame in X]) if len(X) else np.zeros((0, n_frequencies(X.shape[1])))
