#!/bin/bash
# The 20 plain-torch runs of docs/figures/fitting/own_runs/own_runs.json (issue 50), made with
# docs/examples/own_network.py (no package trainer), one after the other on one core each:
#   bash docs/figures/fitting/own_runs/make_runs.sh [FOLDER]      (default ./runs; about 40 min on 2 cores)
# then: python docs/examples/own_network_check.py FOLDER/*/ --by-eye docs/figures/fitting/own_runs/by_eye.json \
#           --figure docs/figures/fitting/own_runs/key_frequencies.png --out own-run-check
# (by_eye.json says which runs were named by eye before the rule saw them: eleven of the twenty)
set -e
S="$(cd "$(dirname "$0")/../../../examples" && pwd)/own_network.py"
mkdir -p "${1:-runs}" && cd "${1:-runs}"
run() { name=$1; shift; [ -s "$name/run.npz" ] && return; python "$S" --out "$name" "$@" > "$name.log" 2>&1; }
run mlp41_s0 --arch mlp --p 41 --d 64 --seed 0 --gradients
run mlp41_s1 --arch mlp --p 41 --d 64 --seed 1
run mlp59_s2 --arch mlp --p 59 --d 128 --seed 2
run mlp41_s3_lowfrac --arch mlp --p 41 --d 64 --seed 3 --frac 0.15
run tf37_s5 --arch transformer --p 37 --d 64 --seed 5 --frac 0.5 --lr 1e-3 --steps 6000 --gradients
run mlp47_s4_nowd --arch mlp --p 47 --d 96 --seed 4 --frac 0.3 --wd 0
run tf41_s6 --arch transformer --p 41 --d 128 --seed 6 --frac 0.4 --lr 1e-3 --steps 6000
run tf31_s7_lowfrac --arch transformer --p 31 --d 64 --seed 7 --frac 0.15 --lr 1e-3 --steps 4000
run mlp53_s8 --arch mlp --p 53 --d 64 --seed 8
run mlp43_s9 --arch mlp --p 43 --d 128 --seed 9 --frac 0.5
run tf43_s10 --arch transformer --p 43 --d 96 --seed 10 --frac 0.5 --lr 1e-3 --steps 6000
run mlp37_s11 --arch mlp --p 37 --d 64 --seed 11 --frac 0.5 --gradients
run mlp61_s12 --arch mlp --p 61 --d 256 --seed 12 --frac 0.35
run tf29_s13 --arch transformer --p 29 --d 64 --seed 13 --frac 0.6 --lr 1e-3 --steps 5000
run tf37_s20 --arch transformer --p 37 --d 64 --seed 20 --frac 0.5 --lr 3e-3 --steps 5000 --gradients
run tf43_s21 --arch transformer --p 43 --d 128 --seed 21 --frac 0.5 --lr 3e-3 --steps 5000
run tf31_s22 --arch transformer --p 31 --d 96 --seed 22 --frac 0.6 --lr 3e-3 --steps 4000
run mlp67_s23 --arch mlp --p 67 --d 64 --seed 23 --frac 0.4
run mlp41_s24_short --arch mlp --p 41 --d 64 --seed 24 --steps 2500 --gradients
run tf23_s30 --arch transformer --p 23 --d 64 --seed 30 --frac 0.7 --lr 1e-3 --steps 6000 --gradients
