#!/usr/bin/env bash
# The plain-torch runs of the dimension axis (bench_force_fit.py --dims --run ...): an MLP at
# p = 41, d = 64 (grokked, 161 snapshots) and a one-layer transformer at p = 59, d = 128 (5000
# steps, not grokked: validation accuracy 0.52, 201 snapshots), both recorded with gradients by
# docs/examples/own_network.py (the user's own training loop; EmbeddingRecorder is its one line
# of this package). About 1 and 11 minutes on 2 cores. The runs are not committed (23 MB).
set -euo pipefail
out=${1:-runs}
python docs/examples/own_network.py --arch mlp --p 41 --d 64 --seed 55 --steps 8000 --snapshot-every 50 \
  --gradients --out "$out/mlp41_d64"
python docs/examples/own_network.py --arch transformer --p 59 --d 128 --seed 56 --frac 0.5 --lr 1e-3 \
  --steps 5000 --snapshot-every 25 --gradients --out "$out/tf59_d128"
