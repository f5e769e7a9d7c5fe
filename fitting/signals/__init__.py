"""The shared signal base of :mod:`fitting`: the Fourier signals of
embeddings (``fourier``), which frequencies to follow (``frequencies``) and
the stages of a run read from them and the network's curves (``stages``).
Every other subpackage of ``fitting`` may import these and nothing else from
the top level (docs/architecture.md)."""

from .fourier import (DC_SCALAR, fourier_signals, frequency_circularity, n_frequencies, surviving_frequencies,
                      trajectory_signals)
from .frequencies import (FREQUENCY_RULES, KEY_NULL_LEVEL, KEY_RATIO, FrequencySelection, chance_ratio,
                          key_frequencies, parse_frequencies, select_frequencies)
from .stages import STAGE_NAMES, RunStages, Stage, network_curves, stage_windows, stages

__all__ = ["fourier_signals", "trajectory_signals", "surviving_frequencies", "frequency_circularity", "n_frequencies",
           "DC_SCALAR", "key_frequencies", "select_frequencies", "FrequencySelection", "KEY_RATIO", "KEY_NULL_LEVEL",
           "FREQUENCY_RULES", "parse_frequencies", "chance_ratio", "stages", "RunStages", "Stage", "network_curves",
           "STAGE_NAMES", "stage_windows"]
