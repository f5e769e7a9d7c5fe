"""The torch backend's configurations, file size and missing-torch behaviour:
these run without torch."""

import os
import subprocess
import sys

import numpy as np
import pytest

from fitting.training import SurvivalMLPConfig, ToyConfig, config_for
from particles import Trajectory


# ------------------------------------------------------------ without torch
def test_configs_validate_without_torch():
    assert SurvivalMLPConfig().p == 59 and SurvivalMLPConfig().d == 128 and SurvivalMLPConfig().dtype == "float64"
    with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0"):
        SurvivalMLPConfig(weight_decay=-1)
    with pytest.raises(ValueError, match="train_fraction must be in"):
        SurvivalMLPConfig(train_fraction=1.5)
    with pytest.raises(ValueError, match="task must be one of"):
        ToyConfig(task="ranking")
    with pytest.raises(ValueError, match=r"d must be an int in \[1, 8\]"):
        ToyConfig(d=9)
    with pytest.raises(ValueError, match="group must be one of"):
        ToyConfig(group="cyclic")
    with pytest.raises(ValueError, match="k must be in"):
        config_for("sparse-modular", k=20)
    with pytest.raises(ValueError, match="batch_size must be <= n_train"):
        config_for("sparse-modular", batch_size=100, n_train=10)
    with pytest.raises(ValueError, match="unknown survival-mlp config field"):
        config_for("survival-mlp", heads=4)
    with pytest.raises(ValueError, match="model must be one of"):
        config_for("resnet")


@pytest.mark.slow
def test_importing_fitting_without_torch_works_and_training_says_how_to_install():
    code = ("import sys\n"
            "class NoTorch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ImportError('torch hidden for this test')\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "import fitting, fitting.training as b\n"
            "fitting.LinearODE().fit(__import__('numpy').ones((20, 2)) + __import__('numpy').arange(20)[:, None])\n"
            "cfg = b.config_for('toy', steps=2)\n"
            "try:\n    b.train(cfg)\nexcept b.TorchMissingError as e:\n    print('MISSING:', e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "MISSING:" in res.stdout and "pip install '.[torch]'" in res.stdout


def test_trajectory_file_of_a_full_survival_run_stays_under_30_mb(tmp_path):
    # the shapes of a 30 000-step run with signals every step and a snapshot
    # every 100 steps; random values are the incompressible worst case
    rng = np.random.default_rng(0)
    names = ["train_loss", "train_acc", "val_loss", "val_acc", "signal_dc", "grad_norm_embedding",
             "grad_norm_layer1", "grad_norm_layer2", "grad_norm_layer3"]
    traj = Trajectory(embeddings=rng.normal(size=(301, 59, 128)), snapshot_steps=np.arange(301) * 100,
                      steps=np.arange(30000), signals=rng.uniform(size=(30000, 29)),
                      scalars={n: rng.normal(size=30000) for n in names})
    assert os.path.getsize(traj.save(tmp_path / "big.npz")) < 30e6


