"""The clustering-head sandbox (docs/sandbox.md): every layer of a d = 2
network at every recorded step, drawn as one frame per step and as an
animation, with its loss spikes traced to their layer and its two stages
placed. Reads the layer states :mod:`fitting.training.layers` records (it
never imports the trainers)."""

from .data import LayerStates, NoLayersError, load_layers

__all__ = ["LayerStates", "NoLayersError", "load_layers"]
