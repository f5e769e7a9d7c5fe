"""The clustering-head sandbox (docs/sandbox.md): every layer of a d = 2
network at every recorded step, drawn as one frame per step and as an
animation, with its loss spikes traced to their layer and its two stages
placed. Reads the layer states :mod:`fitting.training.layers` records (it
never imports the trainers).

Public API::

    LayerStates, load_layers, NoLayersError      a run's layer states (data)
    draw_frame                                   every panel of one step (frame)
    animate                                      GIF or MP4 over the recorded steps (animation)
    find_spikes, trace_spikes, find_stages,
    report_table, within_class_share             spikes, their causes, the two stages (spikes)
"""

from particles.core.lazy import attach as _attach

_EXPORTS = {
    "LayerStates": (".data", "LayerStates"),
    "load_layers": (".data", "load_layers"),
    "NoLayersError": (".data", "NoLayersError"),
    "draw_frame": (".frame", "draw_frame"),
    "animate": (".animation", "animate"),
    "find_spikes": (".spikes", "find_spikes"),
    "trace_spikes": (".spikes", "trace_spikes"),
    "find_stages": (".spikes", "find_stages"),
    "report_table": (".spikes", "report_table"),
    "within_class_share": (".spikes", "within_class_share"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = _attach(__name__, _EXPORTS)
