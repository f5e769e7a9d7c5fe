"""A custom force law: a cut-off well within a class, a soft push between
classes (docs/custom_force_law.md). Run: python custom_force_law.py [--quick]"""
import argparse
from typing import NamedTuple

import numpy as np

from particles import PairEnergy, PairTerm


class CutoffParams(NamedTuple):
    k: float = 8.0    # depth of the well within a class
    rc: float = 8.0   # the well is 0 beyond |s_u - s_v| = rc
    k_r: float = 2.0  # height of the push between classes


def well(r2, prm):  # -k (1 - r^2/rc^2)^3 inside rc, 0 outside
    t = np.maximum(0.0, 1.0 - r2 / (prm.rc * prm.rc))  # np.maximum: runs on arrays too
    return -prm.k * t * t * t


def well_derivative(r2, prm):  # d well / d r^2 (given: the well branches on r^2)
    t = np.maximum(0.0, 1.0 - r2 / (prm.rc * prm.rc))
    return 3.0 * prm.k * t * t / (prm.rc * prm.rc)


def push(r2, prm):  # k_r / (1 + r^2); its derivative comes by complex step
    return prm.k_r / (1.0 + r2)


def cutoff_law(k=8.0, rc=8.0, k_r=2.0, wd=4.0):
    return PairEnergy(distance=PairTerm(same=well, other=push, params=CutoffParams(k, rc, k_r),
                                        same_derivative=well_derivative), wd=wd, name="cutoff")


def main():
    from particles import classify_structure, modular_addition, simulate

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a short run (CI)")
    parser.add_argument("--seed", type=int, default=0, help="split and start (default 0)")
    args = parser.parse_args()
    p = 17
    train, _ = modular_addition(p).split(0.8, seed=args.seed)
    x0 = np.random.default_rng(args.seed).normal(size=(p, 2))
    traj = simulate(x0, train, cutoff_law(), steps=500 if args.quick else 10_000, dt=0.01)
    print(f"energy {traj.energy[0]:.2f} -> {traj.energy[-1]:.2f}; "
          f"structure: {classify_structure(traj.embeddings[-1], modular_addition(p))}")


if __name__ == "__main__":
    main()
