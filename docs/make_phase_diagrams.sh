#!/usr/bin/env bash
# Structure phase diagrams of docs/particles.md: lam x wd, 20 seeds a cell,
# N = 17, r = 0.8, d = 2, x0 ~ N(0, 1). The first three: dt = 0.002 for
# 25 000 steps (t = 50), small enough a step for the stiffest cell (lam = 10),
# about 6 minutes each on 2 cores; the last (clustering-alignment) about 4.
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
# the first three diagrams keep the clustering of the first grids preset
# (k_a = 3, sig_r = 1, particle decay = the swept wd, 5000-step presets)
old=(--set k_a=3 --set sig_r=1)
# clustering (first grids preset) + axial alignment: all four structures
embdyn sweep --preset grids "${old[@]}" --set alignment_form=axial --set sig_t=0.5 "${common[@]}" \
  --out "$root/phase_clustering_axial"
# axial alignment alone (circles preset)
embdyn sweep --preset circles "${common[@]}" --out "$root/phase_axial"
# clustering + the baseline cosine alignment (exact gradient; docs/particles.md, "The energy")
embdyn sweep --preset grids "${old[@]}" --set sig_t=0.2 "${common[@]}" --out "$root/phase_clustering_cosine"
# clustering-alignment preset: wd is the classifier's weight decay (alignment
# softened by the bias scale 1/wd); t = 100 as the preset, with dt = 0.002
# (the preset's dt = 0.01 is too coarse for lam = 10: 0/20 circles there at
# wd = 1, against 3/4 with dt = 0.002)
if [ "${QUICK:-0}" = 1 ]; then
  classifier=(--grid lam=1,3 --grid wd=0,1 --set steps=500 --set record_every=100 --seeds 2 --quiet)
else
  classifier=(--grid lam=0,1,3,10 --grid wd=0,0.3,0.6,1,2 --set dt=0.002 --set steps=50000 --set record_every=1000
              --seeds 20 --quiet)
fi
embdyn sweep --preset clustering-alignment "${classifier[@]}" --out "$root/phase_clustering_alignment_classifier"
