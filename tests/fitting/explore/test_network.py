"""The explorer finds the live networks by entry point, and says how to
install torch when they cannot load for want of it."""

import importlib.metadata as md

import pytest

from fitting.explore import network


def test_the_trainers_register_the_constant_attention_network():
    assert "constant-attention" in network.live_network_names()


def test_an_unknown_network_is_refused_by_name():
    with pytest.raises(ValueError, match="network must be one of .*constant-attention.*'mlp'"):
        network.live_network_class("mlp")


def test_without_torch_it_says_how_to_install_it(monkeypatch):
    class Missing:
        name = "constant-attention"

        def load(self):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr(network, "entry_points", lambda group: [Missing()] if group == network.LIVE_NETWORKS
                        else md.entry_points(group=group))
    with pytest.raises(RuntimeError, match=r"pip install 'embedding-dynamics\[torch\]'"):
        network.live_network_class()


def test_another_import_error_is_not_taken_for_a_missing_torch(monkeypatch):
    class Broken:
        name = "constant-attention"

        def load(self):
            raise ModuleNotFoundError("No module named 'numpyy'", name="numpyy")

    monkeypatch.setattr(network, "entry_points", lambda group: [Broken()])
    with pytest.raises(ModuleNotFoundError, match="numpyy"):
        network.live_network_class()
