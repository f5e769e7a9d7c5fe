"""The networks the explorer can train live, found by entry point: the
trainers (``fitting.training``, the only torch user) register theirs under
:data:`LIVE_NETWORKS`, so the explorer imports neither them nor torch, and
without the ``[torch]`` extra it says how to install it instead of failing."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

__all__ = ["LIVE_NETWORKS", "TORCH_MISSING", "live_network_names", "live_network_class"]

#: the entry-point group of the live networks (a class taking the control values as keywords)
LIVE_NETWORKS = "embdyn.live_networks"
#: what the explorer says when the networks cannot load for want of torch
TORCH_MISSING = ("the Network tab trains the network with torch, which is not installed: "
                 "pip install 'embedding-dynamics[torch]' (torch==2.13.0, CPU)")


def live_network_names() -> list[str]:
    """The registered live networks' names, sorted."""
    return sorted(e.name for e in entry_points(group=LIVE_NETWORKS))


def live_network_class(name: str = "constant-attention") -> Any:
    """The live network registered as ``name``; a ValueError naming the
    registered ones for another name, a RuntimeError saying how to install
    torch when it is missing."""
    found = [e for e in entry_points(group=LIVE_NETWORKS) if e.name == name]
    if not found:
        raise ValueError(f"network must be one of {live_network_names()}, got {name!r} (is the package installed? "
                         "pip install -e .)")
    try:
        return found[0].load()
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch" or "torch" in str(exc):
            raise RuntimeError(TORCH_MISSING) from None
        raise
