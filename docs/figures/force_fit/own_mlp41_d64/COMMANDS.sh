#!/usr/bin/env bash
# The force fit with windows, gauge and null on the plain-torch MLP of benchmarks/make_dimension_runs.sh
# (p = 41, d = 64, seed 55, grokked: validation accuracy 0.996). About 100 s and 6 s on 2 cores.
set -euo pipefail
run=${1:-runs/mlp41_d64/run.npz}
out=docs/figures/force_fit/own_mlp41_d64
embdyn force-fit "$run" --windows 0,250,1000,2500,8001 --null 10 --bootstrap 50 --out "$out/builtin"
embdyn force-fit "$run" --law effective --terms effective --windows 0,250,1000,2500,8001 --null 10 --bootstrap 50 \
  --out "$out/effective"
# the committed files are $out/builtin/force_fit.json -> builtin_null.json, force_shares.png -> builtin_null.png,
# $out/effective/force_fit.json -> effective_null.json
