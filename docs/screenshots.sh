#!/usr/bin/env bash
# Build the docs and take headless-browser screenshots of a few pages, to look
# at before a release: bash docs/screenshots.sh [OUT]   (needs Debian's chromium)
set -euo pipefail
out=${1:-docs/_build/screenshots}
html=docs/_build/html
python -m sphinx -W -q -b html docs "$html"
mkdir -p "$out"
for page in index getting_started custom_force_law bring_your_own_run api/fitting.ode api/particles.simulate; do
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1400 \
        --screenshot="$out/${page//\//_}.png" "file://$PWD/$html/$page.html" 2>/dev/null
done
echo "screenshots in $out"
