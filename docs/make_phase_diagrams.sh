#!/usr/bin/env bash
# Structure phase diagrams of docs/particles.md: lam x wd, 20 seeds a cell,
# N = 17, r = 0.8, d = 2, x0 ~ N(0, 1), dt = 0.002 for 25 000 steps (t = 50),
# small enough a step for the stiffest cell (lam = 10). About 6 minutes each
# on 2 cores.
#
#   bash docs/make_phase_diagrams.sh [OUT_ROOT]      (default docs/figures)
#   QUICK=1 bash docs/make_phase_diagrams.sh OUT     (2 x 2 cells, 2 seeds, 500 steps: CI)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-docs/figures}
if [ "${QUICK:-0}" = 1 ]; then
  common=(--grid lam=0.3,3 --grid wd=0.1,1 --set dt=0.01 --set steps=500 --set record_every=100 --seeds 2 --quiet)
else
  common=(--grid lam=0,0.1,0.3,1,3,10 --grid wd=0.01,0.03,0.1,0.3,1 --set dt=0.002 --set steps=25000
          --set record_every=500 --seeds 20 --quiet)
fi
# clustering (grids preset) + axial alignment: all four structures
embdyn sweep --preset grids --set alignment_form=axial --set sig_t=0.5 "${common[@]}" --out "$root/phase_clustering_axial"
# axial alignment alone (circles preset)
embdyn sweep --preset circles "${common[@]}" --out "$root/phase_axial"
# clustering + the SPEC baseline cosine alignment (exact gradient)
embdyn sweep --preset grids --set sig_t=0.2 "${common[@]}" --out "$root/phase_clustering_cosine"
