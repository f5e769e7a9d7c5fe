"""The shared signal base of :mod:`fitting`: the Fourier signals of
embeddings (``fourier``) and which frequencies to follow (``frequencies``).
Every other subpackage of ``fitting`` may import these and nothing else from
the top level (docs/architecture.md)."""

from .fourier import (DC_SCALAR, fourier_signals, frequency_circularity, n_frequencies, surviving_frequencies,
                      trajectory_signals)
from .frequencies import (FREQUENCY_RULES, KEY_NULL_LEVEL, KEY_RATIO, FrequencySelection, chance_ratio,
                          key_frequencies, parse_frequencies, select_frequencies)

__all__ = ["fourier_signals", "trajectory_signals", "surviving_frequencies", "frequency_circularity", "n_frequencies",
           "DC_SCALAR", "key_frequencies", "select_frequencies", "FrequencySelection", "KEY_RATIO", "KEY_NULL_LEVEL",
           "FREQUENCY_RULES", "parse_frequencies", "chance_ratio"]
