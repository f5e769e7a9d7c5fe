"""Named, runnable parameter sets (``preset("grids")``, ``preset("circles")``,
``preset("clustering-alignment")``).

A preset fixes the dataset (modular addition, p tokens, training fraction),
the initial distribution x0 ~ N(0, init_scale^2), the force parameters and the
integration schedule. ``run(seed)`` draws the training split, x0 and the
Langevin noise from independent streams of ``numpy.random.SeedSequence(seed)``,
so one seed fixes the whole run. The rates at which each preset forms its
structure are measured in docs/particles.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable

import numpy as np

from .datasets import MAX_P, PairDataset, modular_addition
from .core.limits import MAX_STEPS, check_memory
from .params import ForceParams
from .trajectory import Trajectory
from .core.validation import check_float, check_int, check_replace, describe

__all__ = ["Preset", "preset", "PRESETS", "preset_names"]


@dataclass(frozen=True)
class Preset:
    """A complete, seedable simulation set-up.

    Attributes
    ----------
    name : str
    params : ForceParams
    p : int
        Number of tokens (modular addition mod p, unordered pairs).
    fraction : float
        Training fraction of the p(p+1)/2 pairs.
    d : int
        Embedding dimension.
    steps, dt, record_every : int, float, int
        Euler schedule.
    temperature, final_temperature : float
        Langevin temperature, linear from the first to the second.
    init_scale : float
        Standard deviation of x0.
    description : str
    """

    name: str
    params: ForceParams = field(default_factory=ForceParams)
    p: int = 17
    fraction: float = 0.8
    d: int = 2
    steps: int = 5000
    dt: float = 0.01
    record_every: int = 50
    temperature: float = 0.0
    final_temperature: float = 0.0
    init_scale: float = 1.0
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {describe(self.name)}")
        # a law the particle engine runs declares it (particles.law_protocol: ``simulates``), whatever its class
        if not getattr(self.params, "simulates", False) or isinstance(self.params, type):
            raise TypeError(f"params must be a ForceParams or a PairEnergy, got {describe(self.params)}")
        check_int(self.p, "p", 2, MAX_P)
        fraction = check_float(self.fraction, "fraction")
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
        check_int(self.d, "d", 1)
        check_int(self.steps, "steps", 1, MAX_STEPS)
        check_float(self.dt, "dt", 0.0, strict=True)
        check_int(self.record_every, "record_every", 1)
        check_float(self.temperature, "temperature", 0.0)
        check_float(self.final_temperature, "final_temperature", 0.0)
        check_float(self.init_scale, "init_scale", 0.0)
        if not isinstance(self.description, str):
            raise TypeError(f"description must be a str, got {describe(self.description)}")

    def replace(self, **changes: Any) -> "Preset":
        """A copy with run settings and/or ForceParams fields changed."""
        own = {f.name for f in fields(self)}
        force_fields = {f.name for f in fields(ForceParams)}
        check_replace(set(changes) - {"params"}, (own | force_fields) - {"params"}, "preset or force parameter(s)")
        force_changes = {k: v for k, v in changes.items() if k in force_fields}
        run_changes = {k: v for k, v in changes.items() if k in own}
        params = run_changes.pop("params", self.params)
        if force_changes:
            params = params.replace(**force_changes)
        return replace(self, params=params, **run_changes)

    def dataset(self) -> PairDataset:
        """The full dataset D0 (modular addition mod p, unordered pairs)."""
        return modular_addition(self.p)

    def sample(self, seed: int = 0) -> tuple[np.ndarray, PairDataset, np.random.Generator]:
        """``(x0, train, noise_rng)`` for ``seed``."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        # x0 is drawn here: refuse a p x d that cannot fit before drawing it (simulate checks the snapshots)
        check_memory(8.0 * self.p * self.d, f"x0 of p x d = {self.p} x {self.d}", "lower d (or p)")
        from .simulate import check_record_memory  # the run's snapshots against the budget, before any output

        check_record_memory(self.steps // self.record_every + 1 + (1 if self.steps % self.record_every else 0),
                            self.p, self.d)
        split_ss, init_ss, noise_ss = np.random.SeedSequence(int(seed)).spawn(3)
        train, _ = self.dataset().split(self.fraction, np.random.default_rng(split_ss))
        x0 = self.init_scale * np.random.default_rng(init_ss).standard_normal((self.p, self.d))
        return x0, train, np.random.default_rng(noise_ss)

    def run(self, seed: int = 0, *, callback: Callable[[int, int], None] | None = None,
            parallel: bool | None = None, repulsion_tol: float | None = None) -> Trajectory:
        """Simulate from the seed's x0 and split; returns the Trajectory
        (``parallel`` and ``repulsion_tol`` as in :func:`particles.simulate`)."""
        from .simulate import simulate  # the integrators (and numba) load only when a preset runs

        x0, train, noise = self.sample(seed)
        return simulate(x0, train, self.params, steps=self.steps, dt=self.dt, record_every=self.record_every,
                        temperature=self.temperature, final_temperature=self.final_temperature, seed=noise,
                        callback=callback, parallel=parallel, repulsion_tol=repulsion_tol,
                        meta={"preset": self.name, "seed": int(seed), "fraction": self.fraction})

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "params"}
        out["params"] = self.params.to_dict()
        return out


#: clustering shared by ``grids`` and ``clustering-alignment``: a same-class
#: attraction a little longer-ranged than the different-class repulsion and
#: strong enough to hold a 2-D lattice together, and a decay of 4 on the
#: particles that keeps the lattice compact (a weak decay lets it open into
#: a 1-D chain)
_CLUSTERING = dict(k_a=8.0, sig_a=3.0, k_r=1.0, sig_r=2.0)
_PARTICLE_WD = 4.0

PRESETS: dict[str, Preset] = {
    "grids": Preset(
        name="grids",
        params=ForceParams(**_CLUSTERING, lam=0.0, wd=_PARTICLE_WD),
        steps=10000,
        dt=0.01,
        description="Clustering only, the grid extreme (clustering-alignment at wd = 0): same-class pair sums "
                    "attract over a range of 3, different classes repel over 2, and a decay of 4 on the particles "
                    "keeps the lattice compact; tokens settle on 2-D lattices (grids) and imperfect grids.",
    ),
    "circles": Preset(
        name="circles",
        params=ForceParams(k_a=0.0, k_r=0.0, lam=3.0, sig_t=0.5, eps=1.0, wd=0.3, alignment="gradient",
                           alignment_form="axial"),
        steps=5000,
        dt=0.01,
        description="Axial alignment only (exact gradient), the circle extreme: each class's pair sums line up on "
                    "one line through the origin and different classes' lines repel in angle; the particle decay "
                    "and the softening eps together set the radius (about eps / 2). Tokens settle on a circle "
                    "ordered by a frequency coprime to p.",
    ),
    "clustering-alignment": Preset(
        name="clustering-alignment",
        params=ForceParams(**_CLUSTERING, lam=3.0, sig_t=0.5, eps=0.1, wd=0.3, alignment="gradient",
                           alignment_form="axial", wd_target="classifier", bias_scale=1.0,
                           particle_wd=_PARTICLE_WD),
        steps=10000,
        dt=0.01,
        description="Both forces, with wd the classifier's weight decay (Musat's mechanism): the classifier's "
                    "bias scale 1 / wd softens the alignment, so at wd = 0 only clustering acts (grids) and as wd "
                    "grows alignment takes over (circles). Vary it with .replace(wd=...).",
    ),
}


def preset_names() -> list[str]:
    return sorted(PRESETS)


def preset(name: str) -> Preset:
    """The named preset: ``"grids"``, ``"circles"`` or ``"clustering-alignment"``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a preset name (a str), got {type(name).__name__}")
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"name must be a preset name, one of {preset_names()}; unknown preset {name!r}") from None
