"""Parameters of the clustering-and-alignment force law (docs/particles.md, the energy)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .core.validation import MAX_ABS, check_replace

__all__ = ["ForceParams", "ALIGNMENTS", "ALIGNMENT_FORMS", "WD_TARGETS"]

#: How the alignment force moves a pair sum: ``"gradient"`` is the exact
#: -dU_ali/ds; ``"polar"`` keeps only the turning part and makes the angular
#: rate equal to the torque, f = |s|^2 f_grad - (s . f_grad) s.
ALIGNMENTS = ("gradient", "polar")
#: Which alignment energy: ``"cosine"`` is the baseline energy on c (docs/particles.md); ``"axial"``
#: uses c**2, so a class is aligned when its pair sums lie on one line
#: through the origin (either sign), as they do in a perfect circle.
ALIGNMENT_FORMS = ("cosine", "axial")
#: What ``wd`` decays: ``"particles"`` is the baseline's term (wd/2) sum |x|^2;
#: ``"classifier"`` reads wd as the network classifier's weight decay, which
#: bounds its biases, so the alignment's softening length is the bias scale
#: bias_scale / wd (see docs/particles.md, "Weight decay on the classifier").
WD_TARGETS = ("particles", "classifier")


class _PairTerms:
    """``ForceParams.pair_terms``: the terms of the one definition of the law
    (:data:`particles.kernels.law.PAIR_TERMS`), read when first asked so that
    importing the parameters does not import the compiler."""

    def __get__(self, obj, owner) -> tuple[str, ...]:
        from .kernels.law import PAIR_TERMS

        return PAIR_TERMS


@dataclass(frozen=True)
class ForceParams:
    """Parameters of the energy U = U_clu + lam U_ali + (wd/2) sum |x|^2.

    Attributes
    ----------
    k_a, sig_a : float
        Strength (>= 0) and range (> 0) of the Gaussian attraction between
        same-class pair sums.
    k_r, sig_r : float
        Strength (>= 0) and range (> 0) of the Gaussian repulsion between
        different-class pair sums.
    lam : float
        Weight (>= 0) of the alignment energy; 0 switches alignment off.
    sig_t : float
        Angular range (> 0) of the repulsion between different-class
        directions, exp(-(1 - c) / sig_t**2).
    eps : float
        Softening (> 0) of the norm in the cosine, rho(s) = sqrt(|s|^2 + eps^2);
        pair sums much shorter than eps carry little direction.
    wd : float
        Weight decay (>= 0). With ``wd_target="particles"`` a force -wd x on
        every particle (the baseline). With ``"classifier"`` the classifier's weight
        decay: the alignment's softening becomes
        sqrt(eps^2 + (bias_scale / wd)^2), so alignment is off at wd = 0 and
        reaches full strength as wd grows; particles then decay with
        ``particle_wd``.
    wd_target : {"particles", "classifier"}
        What ``wd`` acts on (default the baseline's "particles").
    bias_scale : float
        Classifier variant: the boundary offset (> 0) at wd = 1; offsets
        scale as 1 / wd.
    particle_wd : float
        Classifier variant: decay (>= 0) on the particles, a force
        -particle_wd x (the embedding's own weight decay).
    alignment : {"gradient", "polar"}
        Exact gradient of U_ali, or the torque-driven variant (not a gradient).
    alignment_form : {"cosine", "axial"}
        Baseline cosine energy, or the axial variant on c**2.

    The defaults are the clustering-only setting that forms grids (docs/particles.md,
    the energy): k_a = 3, sig_a = 3, k_r = 1, sig_r = 1, wd = 0.1, lam = 0.
    """

    k_a: float = 3.0
    sig_a: float = 3.0
    k_r: float = 1.0
    sig_r: float = 1.0
    lam: float = 0.0
    sig_t: float = 0.2
    eps: float = 1.0
    wd: float = 0.1
    alignment: str = "gradient"
    alignment_form: str = "cosine"
    wd_target: str = "particles"
    bias_scale: float = 1.0
    particle_wd: float = 0.0

    def __post_init__(self) -> None:
        for name in ("k_a", "sig_a", "k_r", "sig_r", "lam", "sig_t", "eps", "wd", "bias_scale", "particle_wd"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"ForceParams.{name} must be a real number, got {type(value).__name__}")
            if not math.isfinite(value):
                raise ValueError(f"ForceParams.{name} must be finite, got {value}")
            if abs(value) > MAX_ABS:
                raise ValueError(f"ForceParams.{name} must have magnitude <= {MAX_ABS:g}, got {value}")
            object.__setattr__(self, name, float(value))
        for name in ("k_a", "k_r", "lam", "wd", "particle_wd"):
            if getattr(self, name) < 0:
                raise ValueError(f"ForceParams.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("sig_a", "sig_r", "sig_t", "eps", "bias_scale"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ForceParams.{name} must be > 0, got {getattr(self, name)}")
        if self.alignment not in ALIGNMENTS:
            raise ValueError(f"ForceParams.alignment must be one of {ALIGNMENTS}, got {self.alignment!r}")
        if self.alignment_form not in ALIGNMENT_FORMS:
            raise ValueError(f"ForceParams.alignment_form must be one of {ALIGNMENT_FORMS}, got {self.alignment_form!r}")
        if self.wd_target not in WD_TARGETS:
            raise ValueError(f"ForceParams.wd_target must be one of {WD_TARGETS}, got {self.wd_target!r}")
        if self.wd_target == "particles" and (self.bias_scale != 1.0 or self.particle_wd != 0.0):
            raise ValueError("ForceParams.bias_scale and particle_wd act only with wd_target='classifier' "
                             f"(got bias_scale = {self.bias_scale}, particle_wd = {self.particle_wd} with "
                             "wd_target='particles'; leave them at 1 and 0, or set wd_target='classifier')")

    @property
    def effective_lam(self) -> float:
        """The alignment weight the forces use: ``lam``, or 0 when the
        classifier variant has wd = 0 (infinite bias scale: no alignment)."""
        if self.wd_target == "classifier" and self.wd == 0.0:
            return 0.0
        return self.lam

    @property
    def effective_eps(self) -> float:
        """The alignment's softening length: ``eps``, or
        sqrt(eps^2 + (bias_scale / wd)^2) in the classifier variant."""
        if self.wd_target == "classifier" and self.wd > 0.0:
            return math.hypot(self.eps, self.bias_scale / self.wd)
        return self.eps

    @property
    def effective_wd(self) -> float:
        """The decay acting on the particles: ``wd``, or ``particle_wd`` in
        the classifier variant."""
        return self.particle_wd if self.wd_target == "classifier" else self.wd

    @property
    def translation_invariant(self) -> bool:
        """True when U(x + t) = U(x): no alignment term and no decay on the
        particles (as :attr:`particles.PairEnergy.translation_invariant`)."""
        return self.effective_lam == 0.0 and self.effective_wd == 0.0

    @property
    def is_gradient(self) -> bool:
        """True when the forces are -grad U (so U decreases along the flow)."""
        return self.alignment == "gradient" or self.effective_lam == 0.0

    def replace(self, **changes: Any) -> "ForceParams":
        """A copy with some fields changed (validated again)."""
        check_replace(changes, [f.name for f in fields(self)], "ForceParams field(s)")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def kernel_params(self):
        """The typed record the compiled kernels take
        (:class:`particles.kernels.KernelParams`), with the alignment weight,
        softening and particle decay as the forces use them
        (:attr:`effective_lam`, :attr:`effective_eps`, :attr:`effective_wd`)."""
        from .kernels.kernel_params import KernelParams

        return KernelParams(self.k_a, self.sig_a, self.k_r, self.sig_r, self.effective_lam, self.sig_t,
                            self.effective_eps, self.effective_wd, self.alignment == "polar",
                            self.alignment_form == "axial")

    # ------------------------------------------- the force-law protocol (particles.law_protocol)
    pair_terms = _PairTerms()
    tied_terms = {"alignment": ("alignment_same", "alignment_other")}
    #: central pair forces between pair sums sum to zero (no common drift); alignment and decay move it
    term_invariances = {"attraction": ("translation",), "repulsion": ("translation",)}
    simulates = True
    cell_lists = True

    def kernels(self):
        """The built-in law's compiled functions."""
        from .kernels.bundle import BUILTIN_KERNELS

        return BUILTIN_KERNELS

    def unit_record(self):
        """The kernel record with k_a, k_r and lam at 1 and no decay."""
        return self.kernel_params()._replace(k_a=1.0, k_r=1.0, lam=1.0, wd=0.0)

    def term_names(self) -> tuple[str, ...]:
        return self.pair_terms + ("wd",)

    def strengths(self) -> dict[str, float]:
        lam = self.effective_lam
        return {"attraction": self.k_a, "repulsion": self.k_r, "alignment_same": lam, "alignment_other": lam,
                "wd": self.effective_wd}

    def active_terms(self, d: int) -> tuple[str, ...]:
        """Every term in d >= 2; in d = 1 the alignment is dropped (a
        ValueError when it is on)."""
        if d >= 2:
            return self.term_names()
        if self.effective_lam > 0:
            raise ValueError(f"alignment (lam = {self.lam} > 0) needs dimension d >= 2, got d = {d}")
        return ("attraction", "repulsion", "wd")

    def check_dimension(self, d: int) -> None:
        """Any d: the kernels compute the alignment as 0 where it is off."""

    def range_names(self, terms: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        if "attraction" in terms:
            out.append("sig_a")
        if "repulsion" in terms:
            out.append("sig_r")
        if "alignment_other" in terms:
            out.append("sig_t")
        if "alignment_same" in terms or "alignment_other" in terms:
            out.append("bias_scale" if self.wd_target == "classifier" and self.wd > 0 else "eps")
        return tuple(out)

    def range_fields(self, terms: tuple[str, ...]) -> tuple[str, ...]:
        return self.range_names(terms)

    def range_dependencies(self, term: str) -> tuple[str, ...]:
        return self.range_names((term,))

    def range_values(self, names) -> list[float]:
        return [getattr(self, name) for name in names]

    def with_ranges(self, names, values) -> "ForceParams":
        changes = {n: float(v) for n, v in zip(names, values)}
        return self.replace(**changes) if changes else self

    def with_strengths(self, s: dict[str, float]) -> "ForceParams | None":
        """The law with every term's strength from ``s`` (all terms named);
        None when the two alignment halves differ, which one lam cannot hold
        (the gradient alignment then becomes a PairEnergy)."""
        same, other = s["alignment_same"], s["alignment_other"]
        decay = {"particle_wd" if self.wd_target == "classifier" else "wd": s["wd"]}
        if math.isclose(same, other, rel_tol=1e-12, abs_tol=0.0) or (same == 0.0 and other == 0.0):
            lam = 0.5 * (same + other)
            if self.wd_target == "classifier" and self.wd == 0.0 and lam > 0.0:
                # the classifier variant has no alignment at wd = 0: a fitted alignment needs the baseline
                # form, with the softening the forces used and the particles' decay as wd
                return ForceParams(k_a=s["attraction"], sig_a=self.sig_a, k_r=s["repulsion"], sig_r=self.sig_r,
                                   lam=lam, sig_t=self.sig_t, eps=self.effective_eps, wd=s["wd"],
                                   alignment=self.alignment, alignment_form=self.alignment_form)
            if self.wd_target == "classifier" and self.wd == 0.0:
                lam = self.lam
            return self.replace(k_a=s["attraction"], k_r=s["repulsion"], lam=lam, **decay)
        if self.alignment != "gradient":
            raise ValueError("the alignment halves have different strengths, which a ForceParams cannot hold, and "
                             "the polar alignment has no PairEnergy form; fit with the halves tied "
                             "(ForceLawFit(..., tie_alignment=True))")
        return None
