"""Time every command the README shows (besides the two install commands), in
a scratch folder, one after the other, so that the README can say how long
each takes on this machine (issue 50: README examples that finish).

    python benchmarks/readme_commands.py [--only NAME ...] [--json FILE]

Wall-clock seconds and the exit code of each command are written to the JSON
(default docs/figures/readme_commands.json) with the machine's CPU count.
Commands that need the torch extra are skipped (and said so) without it.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (name, command, needs) in the README's order; {run}, {grad} are files made by earlier commands
COMMANDS = [
    ("simulate", "embdyn simulate --preset grids --seed 1 --out sim", ()),
    ("sweep", "embdyn sweep --preset circles --grid lam=1,3 --grid wd=0.1,0.3 --seeds 20 --out sweep", ()),
    ("theory critical-fraction", "embdyn theory critical-fraction --p 10 --out theory", ()),
    ("theory grokking-rate", "embdyn theory grokking-rate --out theory", ()),
    ("theory steps", "embdyn theory steps --out theory", ()),
    ("theory digits", "embdyn theory digits --out theory", ()),
    ("fit", "embdyn fit sim/grids_seed1.npz --model lv-classic --out fit", ()),
    ("train", "embdyn train survival-mlp --seeds 1 --steps 1000 --out train", ("torch",)),
    ("train --gradients", "embdyn train constant-attention --steps 1000 --snapshot-every 10 --gradients --out ca",
     ("torch",)),
    ("force-fit", "embdyn force-fit ca/constant-attention_seed0.npz --out ff", ("torch",)),
    ("bench_particles --quick", f"{sys.executable} {ROOT}/benchmarks/bench_particles.py --quick", ()),
    ("bench_effective --quick", f"{sys.executable} {ROOT}/benchmarks/bench_effective.py --quick", ()),
    ("bench_fitting --quick", f"{sys.executable} {ROOT}/benchmarks/bench_fitting.py --quick", ()),
    ("bench_training --quick", f"{sys.executable} {ROOT}/benchmarks/bench_training.py --quick", ("torch",)),
    ("bench_force_fit --quick", f"{sys.executable} {ROOT}/benchmarks/bench_force_fit.py --quick", ()),
]


def have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="time only these commands (names as listed)")
    parser.add_argument("--json", default=str(ROOT / "docs" / "figures" / "readme_commands.json"))
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, command, needs in COMMANDS:
            if args.only is not None and name not in args.only:
                continue
            missing = [m for m in needs if not have(m)]
            if missing:
                rows.append({"name": name, "command": command, "skipped": f"needs {missing}"})
                print(f"{name}: skipped (needs {missing})")
                continue
            start = time.perf_counter()
            done = subprocess.run(shlex.split(command), cwd=scratch, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            seconds = time.perf_counter() - start
            rows.append({"name": name, "command": command.replace(str(ROOT) + "/", "").replace(sys.executable,
                                                                                                 "python"),
                         "seconds": round(seconds, 1), "exit": done.returncode,
                         "error": done.stderr.strip().splitlines()[-1] if done.returncode else None})
            print(f"{name}: {seconds:.1f} s (exit {done.returncode})", flush=True)
    Path(args.json).write_text(json.dumps({"cpus": os.cpu_count(), "commands": rows,
                                           "command": "python benchmarks/readme_commands.py"}, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
