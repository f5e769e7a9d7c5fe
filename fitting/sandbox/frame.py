"""One frame of the clustering-head sandbox: every layer of a d = 2 network
at one recorded step, drawn as one figure (:func:`draw_frame`).

The panels follow the forward pass, left to right and top to bottom; a
panel is drawn only when the run recorded its states (the constant-attention
network gives the token embedding, the pair sums with their decision regions
and the output probabilities only):

==============================  =============================================================
panel (title starts with)       what
==============================  =============================================================
``Token embedding E``           E (p, 2), each token in its class's colour (the output is tied)
``Position embedding P``        P (T, 2), each point labelled by its position
``Inputs E + P``                E_i + P_t: colour = token i, digit marker = position t
``Normed inputs``               RMSNorm(E + P) on the circle of radius sqrt(2), with the
                                query q as an arrow (the attention score is h . q / sqrt(2))
``Values``                      the value map v = W h + b: the image of the normed circle,
                                the images of the basis vectors and the values of each
                                (token, position)
``Attention weights``           heat map of the weights, probe sequences sorted by class
                                (train above validation) x positions
``Attention output s`` /        the sequence embedding, coloured by class, over the decision
``Pair sum s``                  regions the rest of the network gives the plane (shaded)
``Normed attention output``     RMSNorm(s), the MLP's input
``MLP output``                  the MLP's output
``Residual stream``             r = s + MLP(RMSNorm(s)) over the output's decision regions,
                                with the token embeddings (the tied unembedding) as arrows
``Output probabilities``        softmax(logits): P(class 1) for p = 2, the triangle for p = 3,
                                P(true class) per class for p > 3
``Loss``, ``Accuracy``,         the run's curves with a vertical cursor at the step
``Gradient norms``
==============================  =============================================================

Classes have one colour in every panel (:func:`class_colors`); training
probe sequences are filled markers, validation ones hollow; a key names
them once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize, to_rgba_array
from matplotlib.figure import Figure
from matplotlib.collections import PathCollection
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from matplotlib.patches import Patch, Polygon
from matplotlib.path import Path
from matplotlib.transforms import Bbox, IdentityTransform

from particles.core.validation import check_int

from .data import LayerStates, check_layer_states, envelope

__all__ = ["draw_frame", "FrameDrawer", "class_colors", "frame_panels", "FRAME_SIZE", "FRAME_DPI", "PANEL_TITLES", "PAIR_SUM_TITLE",
           "CURVE_TITLES", "REGION_ALPHA"]

#: the frame's size in inches (width, height) and its resolution
FRAME_SIZE = (16.0, 10.0)
FRAME_DPI = 100
#: the opacity of the shaded decision regions
REGION_ALPHA = 0.25
#: the title of each state panel, by the state it draws (the order of the frame)
PANEL_TITLES: dict[str, str] = {
    "token_embedding": "Token embedding E",
    "position": "Position embedding P",
    "inputs": "Inputs E + P",
    "normed_inputs": "Normed inputs h = RMSNorm(E + P), query q",
    "values": "Values v = W h + b",
    "attention": "Attention weights",
    "sequence": "Attention output s, regions",
    "normed_sequence": "Normed attention output RMSNorm(s)",
    "mlp": "MLP output",
    "residual": "Residual stream r, regions",
    "logits": "Output probabilities",
}
#: the title of the sequence panel of a constant-attention run (its "sequence" is the pair sum)
PAIR_SUM_TITLE = "Pair sum s = E_a + E_b, regions"
#: the titles of the curve panels, by what they draw
CURVE_TITLES: dict[str, str] = {"loss": "Loss", "accuracy": "Accuracy", "grad_norm": "Gradient norms"}
#: the states that make each panel appear (any one of them)
_PANEL_NEEDS: dict[str, tuple[str, ...]] = {
    "token_embedding": ("token_embedding",), "position": ("position",), "inputs": ("inputs",),
    "normed_inputs": ("normed_inputs", "query"), "values": ("values", "value_map"), "attention": ("attention",),
    "sequence": ("sequence",), "normed_sequence": ("normed_sequence",), "mlp": ("mlp",),
    "residual": ("residual",), "logits": ("logits",),
}
_FONT = 9          # panel text
_SMALL = 8         # ticks, legends, annotations
_TRAIN_COLOR, _VAL_COLOR, _CURSOR_COLOR = "#1f1f1f", "#d6336c", "#e8590c"
_POINT_SIZE = 16
_NORM_RADIUS = math.sqrt(2.0)  # RMSNorm without gain puts a d = 2 vector on the circle of radius sqrt(d)
_JITTER_SEED = 20240
_DIGITS: dict[int, Path] = {}  # marker paths of the positions' digits
_CURVE_POINTS = 1600  # points of a drawn curve at most (its envelope beyond)
_ATTENTION_CMAP = "viridis"


def class_colors(p: int) -> np.ndarray:
    """The colour of each class (and token), the same in every panel.

    Parameters
    ----------
    p : int >= 1
        Number of classes.

    Returns
    -------
    ndarray, shape (p, 4)
        RGBA colours: ``tab10`` up to 10 classes, ``tab20`` up to 20,
        evenly spaced ``turbo`` colours beyond.
    """
    p = check_int(p, "p", 1)
    if p <= 10:
        return to_rgba_array(colormaps["tab10"].colors[:p])
    if p <= 20:
        return to_rgba_array(colormaps["tab20"].colors[:p])
    return colormaps["turbo"](np.linspace(0.05, 0.95, p))


def frame_panels(layers: LayerStates) -> list[str]:
    """The state panels a frame of ``layers`` holds, in drawing order
    (keys of :data:`PANEL_TITLES`; the curve panels are beside them)."""
    return [name for name, needs in _PANEL_NEEDS.items() if any(n in layers.states for n in needs)]


@dataclass
class _Ctx:
    """What every panel of one frame reads."""

    layers: LayerStates
    step: int
    i: int
    st: dict[str, np.ndarray]
    colors: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    jitter: np.ndarray
    attention_norm: Normalize

    @property
    def p(self) -> int:
        return self.layers.p


# ------------------------------------------------------------------ helpers
def _style(ax, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=_FONT + 1, y=1.0, pad=4)  # a fixed place: no search for top tick labels
    ax.set_xlabel(xlabel, fontsize=_FONT, labelpad=1)
    ax.set_ylabel(ylabel, fontsize=_FONT, labelpad=1)
    ax.tick_params(labelsize=_SMALL, length=2.5, pad=1.5)


def _plane(ax, title: str) -> None:
    _style(ax, title, "coordinate 1", "coordinate 2")
    ax.set_aspect("equal", adjustable="datalim")
    ax.margins(0.1)  # room for the markers and labels at the edges
    ax.axhline(0, color="0.75", lw=0.6, zorder=0)
    ax.axvline(0, color="0.75", lw=0.6, zorder=0)


def _circle(ax, radius: float = _NORM_RADIUS, centre=(0.0, 0.0), transform: np.ndarray | None = None,
            **kw) -> None:
    th = np.linspace(0, 2 * np.pi, 121)
    pts = radius * np.stack([np.cos(th), np.sin(th)])
    if transform is not None:
        pts = transform @ pts
    ax.plot(pts[0] + centre[0], pts[1] + centre[1], **{"color": "0.55", "lw": 0.8, "ls": ":", **kw})


def _probe_points(ax, xy: np.ndarray, ctx: _Ctx, size: float = _POINT_SIZE) -> None:
    """The probe sequences' points (B, 2): class colours, training filled, validation hollow."""
    for mask, filled, gid in ((ctx.train, True, "train-points"), (~ctx.train, False, "val-points")):
        if not mask.any():
            continue
        c = ctx.colors[ctx.labels[mask]]
        if filled:
            coll = ax.scatter(xy[mask, 0], xy[mask, 1], s=size, c=c, edgecolors="none", zorder=3)
        else:
            coll = ax.scatter(xy[mask, 0], xy[mask, 1], s=size, facecolors="none", edgecolors=c, linewidths=0.9,
                              zorder=3)
        coll.set_gid(gid)


def _regions(ax, ctx: _Ctx, plane: str) -> None:
    reg, ext = ctx.st.get(f"regions_{plane}"), ctx.st.get(f"extent_{plane}")
    if reg is None or ext is None:
        return
    cmap = ListedColormap(ctx.colors[:, :3])
    im = ax.imshow(np.ma.masked_invalid(reg), origin="lower", extent=tuple(float(e) for e in ext), cmap=cmap,
                   vmin=-0.5, vmax=ctx.p - 0.5, alpha=REGION_ALPHA, interpolation="nearest", zorder=0,
                   aspect="equal")
    im.set_gid("regions")
    ax.set_xlim(ext[0], ext[1])
    ax.set_ylim(ext[2], ext[3])
    ax.set_aspect("equal", adjustable="box")


def _digit_path(t: int) -> Path:
    """The marker path of position ``t``'s digits (unit size, as a scatter marker)."""
    if t not in _DIGITS:
        style = MarkerStyle(f"${t}$")
        _DIGITS[t] = style.get_path().transformed(style.get_transform())
    return _DIGITS[t]


def _per_token(ax, arr: np.ndarray, ctx: _Ctx, size: float = 70) -> None:
    """A per-token state (p, T, 2): token i in class i's colour, marked by its position's digits (one
    collection: point i * T + t is token i at position t)."""
    p, T = arr.shape[:2]
    paths = [_digit_path(t) for _ in range(p) for t in range(T)]
    sizes = np.array([size * (1.35 if t >= 10 else 1.0) for _ in range(p) for t in range(T)])
    coll = PathCollection(paths, sizes=sizes, offsets=arr.reshape(p * T, 2), offset_transform=ax.transData,
                          facecolors=np.repeat(ctx.colors[:p], T, axis=0), linewidths=0, zorder=3)
    coll.set_transform(IdentityTransform())  # the marker paths are in points (as a scatter's)
    coll.set_gid("positions")
    ax.add_collection(coll, autolim=False)
    ok = np.all(np.isfinite(arr.reshape(-1, 2)), axis=1)
    if ok.any():
        ax.update_datalim(arr.reshape(-1, 2)[ok])
        ax.autoscale_view()


def _arrow(ax, start, end, color: str, label: str | None = None, lw: float = 1.4) -> None:
    ax.annotate("", xy=(end[0], end[1]), xytext=(start[0], start[1]),
                arrowprops=dict(arrowstyle="-|>", color=color, lw=lw, shrinkA=0, shrinkB=0, mutation_scale=10),
                zorder=4)
    ax.plot([start[0], end[0]], [start[1], end[1]], alpha=0)  # so the limits hold the arrow
    if label:
        ax.annotate(label, xy=(end[0], end[1]), xytext=(3, 3), textcoords="offset points", fontsize=_SMALL,
                    color=color, zorder=5, fontweight="bold")


# ------------------------------------------------------------------ state panels
def _token_embedding(ax, ctx: _Ctx) -> None:
    E = ctx.st["token_embedding"]
    _plane(ax, PANEL_TITLES["token_embedding"])
    coll = ax.scatter(E[:, 0], E[:, 1], s=55, c=ctx.colors[: len(E)], edgecolors="k", linewidths=0.5, zorder=3)
    coll.set_gid("tokens")
    ax.plot([0], [0], alpha=0)
    for i, (x, y) in enumerate(E):
        ax.annotate(str(i), (x, y), xytext=(4, 4), textcoords="offset points", fontsize=_SMALL, zorder=4)


def _position(ax, ctx: _Ctx) -> None:
    P = ctx.st["position"]
    _plane(ax, PANEL_TITLES["position"])
    ax.plot(P[:, 0], P[:, 1], color="0.8", lw=0.7, zorder=1)
    ax.scatter(P[:, 0], P[:, 1], s=22, c="0.35", zorder=3).set_gid("positions")
    ax.plot([0], [0], alpha=0)
    for t, (x, y) in enumerate(P):
        ax.annotate(str(t), (x, y), xytext=(3, 3), textcoords="offset points", fontsize=_SMALL, zorder=4)


def _inputs(ax, ctx: _Ctx) -> None:
    _plane(ax, PANEL_TITLES["inputs"])
    _per_token(ax, ctx.st["inputs"], ctx)
    ax.plot([0], [0], alpha=0)


def _normed_inputs(ax, ctx: _Ctx) -> None:
    _plane(ax, PANEL_TITLES["normed_inputs"])
    _circle(ax)
    if "normed_inputs" in ctx.st:
        _per_token(ax, ctx.st["normed_inputs"], ctx)
    if "query" in ctx.st:
        q = ctx.st["query"]
        _arrow(ax, (0, 0), q, "k", "q")


def _values(ax, ctx: _Ctx) -> None:
    _plane(ax, PANEL_TITLES["values"])
    if "value_map" in ctx.st:
        Wb = ctx.st["value_map"]
        W, b = Wb[:, :2], Wb[:, 2]
        _circle(ax, centre=b, transform=W, color="0.4")
        ax.scatter([b[0]], [b[1]], marker="x", s=30, c="0.3", zorder=4)
        ax.annotate("b", (b[0], b[1]), xytext=(-9, -9), textcoords="offset points", fontsize=_SMALL, color="0.3")
        for k, name in enumerate(("We\u2081", "We\u2082")):
            _arrow(ax, b, b + W[:, k], "0.3", name, lw=1.1)
    if "values" in ctx.st:
        _per_token(ax, ctx.st["values"], ctx)


def _attention(ax, ctx: _Ctx) -> None:
    A = ctx.st["attention"]
    order = np.lexsort((~ctx.train, ctx.labels))
    B, T = A.shape
    im = ax.imshow(A[order], aspect="auto", cmap=_ATTENTION_CMAP, norm=ctx.attention_norm, interpolation="nearest",
                   extent=(-0.5, T - 0.5, B - 0.5, -0.5))
    im.set_gid("attention")
    _style(ax, PANEL_TITLES["attention"], "position t", "probe sequences by class (train, val)")
    labels = ctx.labels[order]
    ticks, names = [], []
    for c in range(ctx.p):
        rows = np.flatnonzero(labels == c)
        if rows.size == 0:
            continue
        ticks.append(rows.mean())
        names.append(str(c))
        if rows[0] > 0:
            ax.axhline(rows[0] - 0.5, color="w", lw=1.2)
        val = rows[~ctx.train[order][rows]]
        if val.size and val[0] > rows[0]:
            ax.axhline(val[0] - 0.5, color="w", lw=0.6, ls=(0, (2, 2)))
    ax.set_yticks(ticks, names if len(names) <= 12 else [""] * len(names))
    for lab, c in zip(ax.get_yticklabels(), [int(n) for n in names]):
        lab.set_color(ctx.colors[c])
        lab.set_fontweight("bold")
    ax.set_xticks(np.arange(T) if T <= 16 else np.linspace(0, T - 1, 6).round())


def _sequence(ax, ctx: _Ctx) -> None:
    pair = ctx.layers.meta.get("model") == "constant-attention"
    _plane(ax, PAIR_SUM_TITLE if pair else PANEL_TITLES["sequence"])
    _probe_points(ax, ctx.st["sequence"], ctx)
    _regions(ax, ctx, "sequence")


def _normed_sequence(ax, ctx: _Ctx) -> None:
    _plane(ax, PANEL_TITLES["normed_sequence"])
    _circle(ax)
    _probe_points(ax, ctx.st["normed_sequence"], ctx)


def _mlp(ax, ctx: _Ctx) -> None:
    _plane(ax, PANEL_TITLES["mlp"])
    _probe_points(ax, ctx.st["mlp"], ctx)


def _residual(ax, ctx: _Ctx) -> None:
    _plane(ax, PANEL_TITLES["residual"])
    _probe_points(ax, ctx.st["residual"], ctx)
    if "token_embedding" in ctx.st and "regions_residual" in ctx.st:
        E = ctx.st["token_embedding"]
        ext = ctx.st["extent_residual"]
        # the tied unembedding's rows from the origin (a logit is r . E_i), scaled into the plane's box (the
        # direction is what classifies); the Layers tab draws them the same way
        half = 0.4 * min(ext[1] - ext[0], ext[3] - ext[2])
        scale = half / max(float(np.max(np.linalg.norm(E, axis=1))), 1e-12)
        origin = np.zeros(2)
        for i, e in enumerate(E):
            _arrow(ax, origin, origin + scale * e, ctx.colors[i], f"E{i}" if len(E) <= 10 else None, lw=1.1)
    _regions(ax, ctx, "residual")


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - np.nanmax(z, axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _logits(ax, ctx: _Ctx) -> None:
    P = _softmax(ctx.st["logits"])
    p = ctx.p
    title = PANEL_TITLES["logits"]
    if p == 2:
        xy = np.column_stack([P[:, 1], ctx.labels + ctx.jitter])
        _probe_points(ax, xy, ctx, size=12)
        ax.axvline(0.5, color="0.5", lw=0.8, ls="--")
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.6, 1.6)
        ax.set_yticks([0, 1], ["0", "1"])
        _style(ax, title, "P(class 1) = softmax(logits)\u2081", "true class (jittered)")
    elif p == 3:
        V = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])
        ax.add_patch(Polygon(V, closed=True, fill=False, ec="0.5", lw=0.8))
        for k in range(3):
            others = [j for j in range(3) if j != k]
            cell = np.vstack([V.mean(0), (V[k] + V[others[0]]) / 2, V[k], (V[k] + V[others[1]]) / 2])
            ax.add_patch(Polygon(cell, closed=True, fc=ctx.colors[k], alpha=0.1, lw=0, zorder=0))
            ax.text(V[k][0], V[k][1] + (0.05 if k == 2 else -0.05), f"class {k}", fontsize=_SMALL, ha="center",
                    va="bottom" if k == 2 else "top", color=ctx.colors[k], fontweight="bold")
        _probe_points(ax, P @ V, ctx, size=12)
        ax.set_xlim(-0.12, 1.12)
        ax.set_ylim(-0.16, 1.02)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xticks([])
        ax.set_yticks([])
        _style(ax, title, "simplex: vertex k = certain of class k", "barycentric coordinates")
    else:
        true = P[np.arange(len(P)), ctx.labels]
        for mask, gid in ((ctx.train, "class-mean-train"), (~ctx.train, "class-mean-val")):
            means = np.array([np.mean(true[mask & (ctx.labels == c)]) if np.any(mask & (ctx.labels == c))
                              else np.nan for c in range(p)])
            if gid.endswith("train"):
                for bar in ax.bar(np.arange(p), np.nan_to_num(means), color=ctx.colors, alpha=0.35, width=0.8,
                                  zorder=1):
                    bar.set_gid(gid)
            else:
                ax.hlines(means, np.arange(p) - 0.4, np.arange(p) + 0.4, colors="k", lw=1.0, ls="--",
                          zorder=2).set_gid(gid)
        xy = np.column_stack([ctx.labels + 0.8 * ctx.jitter, true])
        _probe_points(ax, xy, ctx, size=10)
        ax.axhline(1 / p, color="0.5", lw=0.8, ls="--")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xticks(np.arange(p) if p <= 20 else np.linspace(0, p - 1, 8).round())
        _style(ax, title, "true class (bar: train mean, dashes: val mean)", "P(true class)")


_DRAW: dict[str, Callable[[Any, _Ctx], None]] = {
    "token_embedding": _token_embedding, "position": _position, "inputs": _inputs, "normed_inputs": _normed_inputs,
    "values": _values, "attention": _attention, "sequence": _sequence, "normed_sequence": _normed_sequence,
    "mlp": _mlp, "residual": _residual, "logits": _logits,
}


# ------------------------------------------------------------------ curve panels
def _curve_panels(layers: LayerStates) -> list[str]:
    out = []
    if any(layers.curve(n) is not None for n in ("train_loss", "val_loss", "batch_loss")):
        out.append("loss")
    if any(layers.curve(n) is not None for n in ("train_acc", "val_acc")):
        out.append("accuracy")
    if layers.grad_norm_groups:
        out.append("grad_norm")
    return out


def _smooth(v: np.ndarray, log: bool = False) -> np.ndarray:
    """A centred moving average over about 1/150 of the series (of log v when ``log``)."""
    w = len(v) // 150
    if w < 2:
        return v
    x = np.log(np.where(v > 0, v, np.nan)) if log else v.astype(float)
    ok = np.isfinite(x)
    kernel = np.ones(w)
    num = np.convolve(np.where(ok, x, 0.0), kernel, mode="same")
    den = np.convolve(ok.astype(float), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.exp(out) if log else out


def _series(layers: LayerStates, name: str) -> tuple[np.ndarray, np.ndarray] | None:
    c = layers.curve(name)
    if c is None:
        return None
    return np.asarray(c[0]), np.asarray(c[1], dtype=float)


def _headroom(ax, values: list[np.ndarray], top: float, bottom: float = 0.0) -> None:
    """y limits leaving ``top`` (and ``bottom``) of the axes' height free above (below) the data, for a legend."""
    v = np.concatenate([x[np.isfinite(x)] for x in values] or [np.ones(1)])
    if ax.get_yscale() == "log":
        v = np.log10(v[v > 0]) if np.any(v > 0) else np.zeros(1)
    lo, hi = float(v.min()), float(v.max())
    span = max(hi - lo, 1e-9)
    total = span / max(1.0 - top - bottom, 0.2)
    lo, hi = lo - bottom * total - 0.02 * span, hi + top * total + 0.02 * span
    ax.set_ylim(*((10 ** lo, 10 ** hi) if ax.get_yscale() == "log" else (lo, hi)))


def _loss(ax, ctx: _Ctx) -> None:
    lay = ctx.layers
    shown = []
    for name, label, kw in (("batch_loss", "batch", dict(color="0.8", lw=0.5, zorder=1)),
                            ("train_loss", "train", dict(color=_TRAIN_COLOR, lw=1.1, zorder=3)),
                            ("val_loss", "validation", dict(color=_VAL_COLOR, lw=1.1, ls="--", zorder=3))):
        c = _series(lay, name)
        if c is not None:
            ax.plot(*envelope(*c, _CURVE_POINTS), label=label, **kw)
            shown.append(c[1])
    pos = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in shown] or [np.ones(1)])
    if pos.size and pos.max() / max(pos.min(), 1e-300) > 20:
        ax.set_yscale("log")
    _headroom(ax, shown, top=0.28)
    _style(ax, CURVE_TITLES["loss"], "step", "cross-entropy" + (" (log)" if ax.get_yscale() == "log" else ""))
    ax.legend(fontsize=_SMALL, loc="upper right", ncol=3, frameon=False, handlelength=1.6, columnspacing=1.0,
              borderaxespad=0.3)


def _accuracy(ax, ctx: _Ctx) -> None:
    lay = ctx.layers
    for name, label, kw in (("train_acc", "train", dict(color=_TRAIN_COLOR, lw=1.1, zorder=3)),
                            ("val_acc", "validation", dict(color=_VAL_COLOR, lw=1.1, ls="--", zorder=3))):
        c = _series(lay, name)
        if c is not None:
            ax.plot(*envelope(*c, _CURVE_POINTS), label=label, **kw)
    ax.axhline(1 / ctx.p, color="0.6", lw=0.8, ls=":", label="chance")
    ax.set_ylim(-0.02, 1.3)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    _style(ax, CURVE_TITLES["accuracy"], "step", "accuracy")
    ax.legend(fontsize=_SMALL, loc="upper right", ncol=3, frameon=False, handlelength=1.6, columnspacing=1.0,
              borderaxespad=0.3)


def _grad_norm(ax, ctx: _Ctx) -> None:
    palette = colormaps["Dark2"].colors
    ax.set_yscale("log")
    shown = []
    for k, g in enumerate(ctx.layers.grad_norm_groups):
        s, v = _series(ctx.layers, f"grad_norm_{g}")
        color = palette[k % len(palette)]
        sm = _smooth(v, log=True)
        if sm is not v:
            ax.plot(*envelope(s, v, _CURVE_POINTS), color=color, lw=0.4, alpha=0.18, zorder=1)
        ax.plot(*envelope(s, sm, _CURVE_POINTS), color=color, lw=1.1, label=g, zorder=2)
        shown.append(v[v > 0])
    _headroom(ax, shown, top=0.3)
    smoothed = ", moving average" if any(len(v) // 150 >= 2 for v in shown) else ""
    _style(ax, CURVE_TITLES["grad_norm"], "step", "gradient norm (log)" + smoothed)
    ax.legend(fontsize=_SMALL, loc="upper center", ncol=3, frameon=False, handlelength=1.2, columnspacing=0.8,
              borderaxespad=0.3, labelspacing=0.2)


_CURVES: dict[str, Callable[[Any, _Ctx], None]] = {"loss": _loss, "accuracy": _accuracy, "grad_norm": _grad_norm}


# ------------------------------------------------------------------ the frame
def _key(ax, ctx: _Ctx, panels: list[str]) -> None:
    """The key: class colours, the probe splits, the markers (an axes without axis lines)."""
    ax.set_axis_off()
    ax.set_title("Key", fontsize=_FONT + 1, y=1.0, pad=4)
    ax.set_xlabel("(key)")
    ax.set_ylabel("(key)")
    handles: list[Any] = [Patch(fc=ctx.colors[c], ec="none", label=f"class / token {c}") for c in range(ctx.p)]
    handles += [Line2D([], [], ls="", marker="o", ms=5, mfc="0.3", mec="0.3", label="training probe sequence"),
                Line2D([], [], ls="", marker="o", ms=5, mfc="none", mec="0.3", label="validation probe sequence")]
    if any(n in panels for n in ("inputs", "normed_inputs", "values")):
        handles.append(Line2D([], [], ls="", marker="$7$", ms=7, color="0.3",
                              label="digit = position t (colour = token)"))
    if any(f"regions_{n}" in ctx.layers.states for n in ("sequence", "residual")):
        handles.append(Patch(fc="0.5", alpha=REGION_ALPHA, ec="none", label="shaded: class given there"))
    handles.append(Line2D([], [], color=_CURSOR_COLOR, lw=1.3, label=f"step {ctx.step}"))
    ncol = 1 if len(handles) <= 12 else 2
    ax.legend(handles=handles, loc="upper center", fontsize=_SMALL, ncol=ncol, frameon=False, handlelength=1.4,
              labelspacing=0.45, columnspacing=1.0)


def _title(ctx: _Ctx) -> str:
    lay = ctx.layers
    name = lay.meta.get("model", "run")
    seed = lay.meta.get("seed")
    B, T = lay.probe_tokens.shape
    n_train = int(ctx.train.sum())
    head = f"{name}" + (f" (seed {seed})" if seed is not None else "")
    parts = [f"{head}: step {ctx.step} ({ctx.i + 1} of {len(lay.steps)} recorded)",
             f"p = {lay.p} classes, T = {T} positions, {B} probe sequences ({n_train} train, {B - n_train} val)"]
    accs = []
    for key, label in (("train_acc", "train"), ("val_acc", "val")):
        c = lay.curve(key)
        if c is not None and len(c[0]):
            j = int(np.clip(np.searchsorted(c[0], ctx.step, side="right") - 1, 0, len(c[0]) - 1))
            accs.append(f"{label} acc {float(c[1][j]):.3f}")
    if accs:
        parts.append(", ".join(accs))
    return "   |   ".join(parts)


def _wipe(ax) -> None:
    """Remove what a panel drew (its artists, legend and data limits), keeping the axes and their ticks
    (faster than ``ax.cla()``, which makes every tick anew)."""
    for artist in [*ax.collections, *ax.lines, *ax.patches, *ax.images, *ax.texts, *ax.artists]:
        artist.remove()
    ax.containers.clear()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.dataLim.set(Bbox.null())
    ax.ignore_existing_data_limits = True
    ax.set_autoscale_on(True)
    ax.set_aspect("auto")


class FrameDrawer:
    """The axes of a frame, built once and redrawn at each step (an
    animation redraws the state panels, the key, the cursors and the title
    into the same figure)."""

    def __init__(self, layers: LayerStates, fig: Figure) -> None:
        self.layers, self.fig = layers, fig
        self.panels, self.curves = frame_panels(layers), _curve_panels(layers)
        self.title = None
        labels = np.asarray(layers.probe_labels, dtype=np.int64)
        att = layers.states.get("attention")
        top = float(np.nanmax(att)) if att is not None and np.isfinite(att).any() else 1.0
        self.base = dict(colors=class_colors(layers.p), labels=labels,
                         train=np.asarray(layers.probe_split) == "train",
                         jitter=np.random.default_rng(_JITTER_SEED).uniform(-0.3, 0.3, len(labels)),
                         attention_norm=Normalize(0.0, max(top, 1e-12)))
        slots = len(self.panels) + 1  # and the key
        ncols = 4 if slots > 6 else (3 if slots > 4 else 2)
        nrows = math.ceil(slots / ncols)
        fig.set_layout_engine("constrained", w_pad=0.04, h_pad=0.04, wspace=0.02, hspace=0.02)
        if self.curves:
            outer = fig.add_gridspec(1, 2, width_ratios=[ncols, 1.45 if ncols >= 3 else 1.2])
            left, right = outer[0].subgridspec(nrows, ncols), outer[1].subgridspec(3, 1)
        else:
            left, right = fig.add_gridspec(nrows, ncols), None
        self.axes = {name: fig.add_subplot(left[k // ncols, k % ncols]) for k, name in enumerate(self.panels)}
        if "attention" in self.axes:
            cb = fig.colorbar(ScalarMappable(norm=self.base["attention_norm"], cmap=_ATTENTION_CMAP),
                              ax=self.axes["attention"], fraction=0.06, pad=0.02)
            cb.set_label("attention weight", fontsize=_SMALL)
            cb.ax.tick_params(labelsize=_SMALL)
        k = len(self.panels)
        self.key = fig.add_subplot(left[k // ncols, k % ncols])
        self.cursors = []
        ctx = self._ctx(int(layers.steps[0]))
        first = None
        for k, name in enumerate(self.curves):
            ax = fig.add_subplot(right[k, 0], sharex=first)
            first = first or ax
            _CURVES[name](ax, ctx)
            line = ax.axvline(ctx.step, color=_CURSOR_COLOR, lw=1.3, zorder=5)
            line.set_gid("cursor")
            self.cursors.append(line)

    def _ctx(self, step: int) -> _Ctx:
        i = self.layers.index(step)
        step = int(self.layers.steps[i])
        return _Ctx(layers=self.layers, step=step, i=i, st=self.layers.at(step), **self.base)

    def draw(self, step: int) -> None:
        """Draw the state panels, the key, the cursors and the title at recorded ``step``."""
        ctx = self._ctx(step)
        for name, ax in self.axes.items():
            _wipe(ax)
            _DRAW[name](ax, ctx)
        _wipe(self.key)
        _key(self.key, ctx, self.panels)
        for line in self.cursors:
            line.set_xdata([ctx.step, ctx.step])
        if self.title is None:
            self.title = self.fig.suptitle(_title(ctx), fontsize=_FONT + 2)
        else:
            self.title.set_text(_title(ctx))  # in place: fig.suptitle would move it back above a fixed layout


def draw_frame(layers: LayerStates, step: int, *, fig: Figure | None = None) -> Figure:
    """Every layer of the run at one recorded step, as one figure.

    Parameters
    ----------
    layers : LayerStates
        The run's layer states (:func:`fitting.sandbox.load_layers`).
    step : int
        A recorded step (one of ``layers.steps``).
    fig : matplotlib.figure.Figure, optional
        A figure to draw into (it is cleared first). Default a new
        :data:`FRAME_SIZE` figure at :data:`FRAME_DPI`.

    Returns
    -------
    matplotlib.figure.Figure
        The state panels of :func:`frame_panels` (titles
        :data:`PANEL_TITLES`; the module docstring lists them), a key, and
        the curve panels (titles :data:`CURVE_TITLES`) the run has, each
        with a cursor at ``step``; the figure's layout engine is
        matplotlib's constrained layout.

    Raises
    ------
    TypeError
        when ``layers`` is not a LayerStates or ``fig`` not a Figure.
    ValueError
        when ``step`` was not recorded, naming the nearest recorded steps.
    """
    check_layer_states(layers)
    if fig is not None and not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib.figure.Figure or None, got {type(fig).__name__}")
    layers.index(step)  # before any drawing
    if fig is None:
        fig = Figure(figsize=FRAME_SIZE, dpi=FRAME_DPI)
    else:
        fig.clear()
    FrameDrawer(layers, fig).draw(step)
    return fig


