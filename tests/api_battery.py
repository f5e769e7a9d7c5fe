"""Bad-input battery over the public API of particles, effective_theory,
fitting and fitting.training: exported functions, classes (their
constructors) and their public methods.

Used two ways:

* by ``tests/test_bad_input.py`` (the suite): every entry, every parameter,
  a fixed list of bad values plus hypothesis-generated ones;
* as a measurement script that writes the whole report::

      python -m tests.api_battery [--json OUT] [--timeout S]

Coverage is enumerated, not listed: :func:`public_api` walks ``__all__`` of
each package, and every function, class and public method with parameters
must have an entry in :func:`registry` or a reason in ``SKIP`` (a new export
without either fails the suite).

For each parameter of each good call the battery swaps in bad values of the
parameter's kind and classifies the outcome:

* named: ValueError/TypeError whose message names the parameter;
* unnamed: ValueError/TypeError that does not name it;
* other: any other exception;
* accepted: returned finite numbers for a value listed in ``ACCEPT`` (a
  documented meaning: ``seed=None`` is fresh entropy, ``k=None`` all
  eigenvalues, ...);
* finite: returned finite numbers for a value nobody documented;
* nonfinite: returned NaN or inf (a silent failure);
* slow: still running after the time limit.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import signal
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

import effective_theory as et
import fitting as ft
import fitting.explore as fe
import particles as pt

PACKAGES = ("particles", "effective_theory", "fitting", "fitting.explore", "fitting.training")

#: entries with parameters that the battery leaves alone, and why
SKIP: dict[str, str] = {
    # the parallel sweep and the demo-sized helpers are covered by their own CLI/validation tests
    "particles.sweep": "runs a process pool; its arguments (counts bounded by the memory budget, journals never "
                       "followed through a symlink) are checked in tests/particles/test_sweep.py and test_validation.py",
    "particles.Preset": "a dataclass of settings, validated when run: Preset.run and Preset.replace are in the battery",
    "particles.EffectiveLoss": "built through from_matrix/from_pairs/classification, which are in the battery",
    "particles.MinimizeResult": "a result container the library builds",
    "effective_theory.GrokkingRateCurve": "a result container the library builds",
    "effective_theory.StructureProbability": "a result container the library builds",
    "fitting.ODEAnalysis": "a result container the library builds",
    "fitting.SurvivalClassifierResult": "a result container the library builds",
    "fitting.FrequencySelection": "a result container the library builds (select_frequencies is in the battery)",
    "fitting.training.GridResult": "a result container the library builds",
    "fitting.training.NetworkSweep": "a result container the library builds",
    "fitting.training.NetworkComparison": "a result container the library builds",
    "fitting.training.EmbeddingRecorder": "takes a live torch tensor; checked in tests/fitting/training/test_recorder.py",
    "fitting.Regressor.check": "plug-in protocol: the estimator calls it on its own parameters",
    "fitting.Library.features": "the estimators' unchecked inner-loop form of Library.transform (in the battery)",
    "fitting.Library.jacobian": "the weighted refit's unchecked inner-loop derivative of Library.features "
                                "(checked against central differences in tests/fitting/ode/test_library.py)",
    "fitting.PolynomialLibrary.jacobian": "as Library.jacobian, in closed form (tests/fitting/ode/test_library.py)",
    "fitting.ODEModel.regression_rows": "a seam for BootstrapEnsemble: fit builds the rows from checked data",
    "fitting.ODEModel.solve_rows": "a seam for BootstrapEnsemble: called on rows regression_rows built",
    "fitting.LinearODE.solve_rows": "a seam for BootstrapEnsemble: called on rows regression_rows built",
    "fitting.ODEModel.predict_rows": "a seam for score and the plots: called on rows regression_rows built",
    "fitting.LinearODE.predict_rows": "a seam for score and the plots: called on rows regression_rows built",
    "fitting.ODEModel.time_values": "a seam for the plots: returns t or the fitted step, no work",
    "fitting.EquationsMixin.variable_names": "names are checked by equations() and the plots, which are in the battery",
    "fitting.Regressor.solve_one": "plug-in protocol: Regressor.fit calls it on arrays it has checked",
    "fitting.Regressor.readmission": "plug-in protocol: ODEModel.fit calls it on the rows it built",
    "fitting.STLSQ.readmission": "plug-in protocol: ODEModel.fit calls it on the rows it built",
    "fitting.STLSQ.solve_one": "plug-in protocol: Regressor.fit calls it on arrays it has checked",
    "fitting.OLS.solve_one": "plug-in protocol: Regressor.fit calls it on arrays it has checked",
    "fitting.Lasso.solve_one": "plug-in protocol: Regressor.fit calls it on arrays it has checked",
    "fitting.LassoCV.solve_one": "plug-in protocol: Regressor.fit calls it on arrays it has checked",
    "fitting.LassoCV.check_rows": "plug-in protocol: Regressor.fit calls it with the row count it has checked",
    "fitting.Regressor.check_rows": "plug-in protocol: Regressor.fit calls it with the row count it has checked",
    "fitting.Formulation.bind": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.Formulation.rows": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.FlowMap.bind": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.FlowMap.rows": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.FlowMap.derivative": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.WeakForm.bind": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.WeakForm.rows": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.WeakForm.derivative": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.WeakForm.test_functions": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.WeakForm.window_starts": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.WeakForm.window_weights": "plug-in protocol: ODEModel.fit calls it on runs it has checked",
    "fitting.EquationsMixin.print": "writes equations(); its parameters are those of ODEModel.equations, in the battery",
    "fitting.training.train_batched": "trains torch models for minutes; its checks are in tests/fitting/training/test_trainer.py "
                                      "and test_hostile_checkpoints.py (seeds bounded by memory, resume)",
    "fitting.training.train_grid": "trains torch models for minutes; its checks are in tests/fitting/training/test_grid.py "
                                   "and test_hostile_checkpoints.py (cells bounded by memory, resume)",
    "fitting.training.train_network_sweep": "trains torch models for minutes; its checks are in tests/fitting/training/test_trainer.py",
    "fitting.training.compare_network": "trains torch models for minutes; its checks are in tests/fitting/training/test_compare.py",
    "fitting.training.check_device": "imports torch (the battery runs without it); its refusals are in "
                                     "tests/fitting/training/test_devices.py",
    "fitting.training.available_devices": "takes no argument; imports torch; tests/fitting/training/test_devices.py",
    "fitting.training.load_checkpoints": "reads torch checkpoints; its checks are in tests/fitting/training/test_recorder.py "
                                         "and, for damaged or hostile files, test_hostile_checkpoints.py",
    "fitting.training.SparseModularConfig": "same __post_init__ checks as ToyConfig, which is in the battery",
    "fitting.training.SurvivalMLPConfig": "same __post_init__ checks as ToyConfig, which is in the battery",
    "fitting.training.ConstantAttentionConfig": "same __post_init__ checks as ToyConfig, which is in the battery",
    "fitting.Formulation.derivative": "abstract plug-in method; FiniteDifference/SavitzkyGolay.derivative are in the battery",
    "fitting.training.EmbeddingRecorder.attach": "takes a live torch module; checked in tests/fitting/training/test_recorder.py",
    "fitting.training.EmbeddingRecorder.record": "called by the training loop with a step; tests/fitting/training/test_recorder.py",
    "fitting.training.EmbeddingRecorder.log": "takes curves of a live training loop; its refusals (steps going "
                                               "back, lengths that disagree, non-finite values) are tested in "
                                               "tests/fitting/training/test_recorder.py",
    "fitting.RunStages": "a result record built by fitting.stages (its numbers checked there)",
    "fitting.training.EmbeddingRecorder.trajectory": "builds a Trajectory from recorded tensors; tests/fitting/training/test_recorder.py",
    "fitting.training.GridResult.load": "result-container file I/O (same atomic JSON helpers); tests/fitting/training/test_grid.py",
    "fitting.training.GridResult.save": "result-container file I/O (same atomic JSON helpers); tests/fitting/training/test_grid.py",
    "fitting.training.GridResult.majority": "summary of a trained grid; tests/fitting/training/test_grid.py",
    "fitting.training.GridResult.merge": "joins trained grids; tests/fitting/training/test_grid.py",
    "fitting.training.GridResult.reclassify": "re-reads a trained grid's curves; tests/fitting/training/test_grid.py",
    "fitting.training.NetworkComparison.load": "result-container file I/O; tests/fitting/training/test_compare.py",
    "fitting.training.NetworkComparison.save": "result-container file I/O; tests/fitting/training/test_compare.py",
    "fitting.training.NetworkComparison.plot": "draws a finished comparison; tests/fitting/training/test_compare.py",
    "fitting.training.NetworkSweep.load": "result-container file I/O; tests/fitting/training/test_trainer.py",
    "fitting.training.NetworkSweep.save": "result-container file I/O; tests/fitting/training/test_trainer.py",
    "fitting.training.toy_phase_setting": "returns a ToyConfig from a named table; config_for is in the battery",
}
# the force-law protocol (particles.law_protocol): particles.law_terms calls these with names and arrays it has
# checked; the checked public entries are the law_terms functions of the same names, in the battery
SKIP.update({f"particles.{kind}.{method}": "force-law protocol: particles.law_terms calls it on checked input"
             for kind in ("ForceParams", "PairEnergy", "EffectiveLoss")
             for method in ("active_terms", "check_dimension", "range_dependencies", "range_fields", "range_names",
                            "range_values", "with_ranges", "with_strengths")})
SKIP["particles.EffectiveLoss.unit_term_forces"] = "force-law protocol: particles.law_terms calls it on checked input"
SKIP.update({f"fitting.{kind}.rate_times": "formulation protocol: fitting.ode.figures calls it with the times and "
                                          "the count of the rates its derivative returned"
             for kind in ("Formulation", "FiniteDifference")})
SKIP["particles.PairTerm.scaled"] = "force-law protocol: PairEnergy.with_strengths calls it with checked strengths"

#: (entries, parameter) of every seeded entry: any non-negative int is a seed
SEEDED: list[tuple[tuple[str, ...], str]] = [
    (('effective_theory.grokking_rate_curve', 'effective_theory.unique_structure_probability', 'fitting.training.train',
      'particles.PairDataset.split', 'particles.Preset.run', 'particles.Preset.sample', 'particles.make_rng'), 'seed'),
    (('fitting.BootstrapEnsemble',), 'random_state'),
    (('fitting.ForceLawFit',), 'seed'),
    (('fitting.survival_classifier',), 'rng'),
]

#: documented values that look bad: (entries, parameter, bad-value label, why it is valid)
ACCEPTED: list[tuple[tuple[str, ...], str, str, str]] = [
    (('fitting.explore.make_app',), 'trajectories', 'empty', 'no files: the explorer with its Live tab only'),
    (('fitting.explore.make_app',), 'phases', 'empty', 'no phase files: the Phase tab says how to give one'),
    (('fitting.ODEModel', 'fitting.ODEModel.score', 'fitting.SimulationScoresMixin.trajectory_score'), 'window', 'nested None',
     '(None, None): an open window (documented)'),
    (('fitting.initial_gradient', 'fitting.initial_signal'), 'signals', 'extra dim',
     '(R, T, K): several runs are documented'),
    (('fitting.EquationsMixin.named_coefficients',), 'threshold', 'zero',
     '0 keeps every term (the default)'),
    (('fitting.EquationsMixin.equations',), 'threshold', 'zero',
     '0 shows every term (the default)'),
    (('particles.Preset.replace',), 'steps', 'zero',
     '0 steps: the initial state only'),
    (('particles.SweepTable.rates',), 'by', 'None',
     'None groups by the swept parameters (documented)'),
    (('effective_theory.grokking_rate', 'effective_theory.predicted_steps'), 'Z', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.ODEModel',), 'alpha', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.ODEModel', 'fitting.LinearODE', 'fitting.LotkaVolterra'), 'derivative', 'None',
     "None: the model's default formulation (documented)"),
    (('fitting.WeakForm',), 'order', 'None',
     'None: chosen from the data (documented)'),
    (('fitting.WeakForm',), 'period_fraction', 'None',
     'None: chosen from the data (documented)'),
    (('fitting.ODEModel.fit', 'fitting.LotkaVolterra.fit', 'fitting.ODEModel.fit_with_rows',
      'fitting.LotkaVolterra.fit_with_rows'), 'names', 'None',
     'None: x1 .. xK (documented)'),
    (('fitting.SimulationScoresMixin.forecast', 'fitting.SimulationScoresMixin.forecast_score'), 'start', 'None',
     "None: the fitted window's end (documented)"),
    (('fitting.SimulationScoresMixin.forecast', 'fitting.SimulationScoresMixin.forecast_score'), 'horizon', 'None',
     'None: to the end of the data (documented)'),
    (('particles.circularity',), 'frequency', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.FlowMap',), 'horizon', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.fourier_signals',), 'p', 'None',
     'None: axis -2 is the token axis, nothing checked against it (documented)'),
    (('particles.PairDataset',), 'indices', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.Regressor.fit',), 'intercept', 'None',
     'None is the documented default (see the docstring)'),
    (('effective_theory.hessian_spectrum', 'effective_theory.laplacian_spectrum'), 'k', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.BootstrapEnsemble.intervals',
      'fitting.EquationsMixin.equations',
      'fitting.EquationsMixin.feature_names',
      'fitting.EquationsMixin.named_coefficients',
     ), 'names', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.training.train',), 'out', 'None',
     'None is the documented default (see the docstring)'),
    (('particles.Trajectory',), 'signals', 'None',
     'None is the documented default (see the docstring)'),
    (('particles.Trajectory',), 'steps', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.WeakForm',), 'stride', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.WeakForm',), 'window', 'None',
     'None is the documented default (see the docstring)'),
    (('fitting.BootstrapEnsemble',), 'random_state', 'None',
     "None seeds from fresh OS entropy (numpy's convention)"),
    (('fitting.survival_classifier',), 'rng', 'None',
     "None seeds from fresh OS entropy (numpy's convention)"),
    (('effective_theory.grokking_rate_curve',
      'effective_theory.unique_structure_probability',
      'particles.PairDataset.split',
      'particles.Preset.run',
      'particles.make_rng',
     ), 'seed', 'None',
     "None seeds from fresh OS entropy (numpy's convention)"),
    (('fitting.BootstrapEnsemble',), 'estimator', 'None',
     'None: LinearODE() (documented)'),
    (('fitting.ODEModel', 'fitting.ODEModel.score', 'fitting.SimulationScoresMixin.trajectory_score'), 'window', 'None',
     'None: all samples (documented)'),
    (('fitting.CustomLibrary',), 'names', 'None',
     'None: f0(x1), f1(x1), ... (documented)'),
    (('particles.classify_structure',
      'particles.grid_defects',
      'particles.pair_sum_accuracy',
      'particles.structure_metrics',
     ), 'dataset', 'None',
     'None: metrics that need no labels only (documented)'),
    (('effective_theory.classify_phase',), 't_train', 'None',
     'None: never reached within the budget (documented)'),
    (('effective_theory.classify_phase',), 't_val', 'None',
     'None: never reached within the budget (documented)'),
    (('particles.SweepTable.from_csv',), 'parameters', 'None',
     'None: the columns before seed (documented)'),
    (('particles.simulate',), 'record_every', 'None',
     'None: the default stride max(1, steps // 100) (documented)'),
    (('particles.warmup',), 'parallel', 'None',
     'None: the serial kernels, and the parallel ones when pairs reaches PARALLEL_MIN_PAIRS (documented)'),
    (('fitting.BootstrapEnsemble.fit',
      'fitting.FiniteDifference.derivative',
      'fitting.ODEModel.fit',
      'fitting.LotkaVolterra.fit',
      'fitting.ODEModel.fit_with_rows',
      'fitting.LotkaVolterra.fit_with_rows',
      'fitting.SimulationScoresMixin.forecast',
      'fitting.SimulationScoresMixin.forecast_score',
      'fitting.ODEModel.score',
      'fitting.SimulationScoresMixin.trajectory_score',
      'fitting.SavitzkyGolay.derivative',
     ), 't', 'None',
     'None: unit time steps (documented)'),
    (('fitting.fourier_signals', 'fitting.frequency_circularity'), 'E', 'extra dim',
     'a (S, p, d) stack of snapshots is documented'),
    (('particles.PairDataset', 'particles.PairEnergy'), 'name', 'unknown',
     'a free-text name'),
    (('particles.SweepTable.from_csv', 'particles.Trajectory.load'), 'path', 'missing folder',
     'a missing file raises FileNotFoundError naming the path, as open() does'),
    (('fitting.BootstrapEnsemble.fit',
      'fitting.FiniteDifference.derivative',
      'fitting.ODEModel.fit',
      'fitting.LotkaVolterra.fit',
      'fitting.ODEModel.fit_with_rows',
      'fitting.LotkaVolterra.fit_with_rows',
      'fitting.ODEModel.score',
      'fitting.SimulationScoresMixin.trajectory_score',
      'fitting.SavitzkyGolay.derivative',
     ), 't', 'scalar',
     'a number is the time step (documented)'),
    (('particles.SweepTable', 'particles.SweepTable.from_csv'), 'parameters', 'empty',
     'a table without swept parameters'),
    (('particles.PairTerm',), 'other', 'None',
     'a term may act on one class relation only (documented)'),
    (('particles.PairTerm',), 'same', 'None',
     'a term may act on one class relation only (documented)'),
    (('fitting.BootstrapEnsemble.fit',
      'fitting.BootstrapEnsemble.predict',
      'fitting.ODEModel.fit',
      'fitting.LotkaVolterra.fit',
      'fitting.ODEModel.fit_with_rows',
      'fitting.LotkaVolterra.fit_with_rows',
      'fitting.SimulationScoresMixin.forecast',
      'fitting.SimulationScoresMixin.forecast_score',
      'fitting.ODEModel.predict',
      'fitting.ODEModel.score',
      'fitting.SimulationScoresMixin.trajectory_score',
     ), 'x', 'extra dim',
     'an (R, T, K) array is R runs (documented)'),
    (('particles.PairDataset.subset',), 'rows', 'empty',
     'an empty subset is a valid (empty) dataset'),
    (('particles.SweepTable',), 'rows', 'empty',
     'an empty table (no runs yet) is a valid SweepTable'),
    (('fitting.ODEModel',), 'library', 'int',
     'an int is the polynomial degree (documented)'),
    (('fitting.survival_classifier',), 'survived', 'extra dim',
     'anything that ravels to (n,) (documented)'),
    (('fitting.fitness_correlation',), 'rate', 'extra dim',
     'both arrays are flattened (documented)'),
    (('fitting.fitness_correlation',), 'signal', 'extra dim',
     'both arrays are flattened (documented)'),
    (('fitting.Regressor.fit',), 'intercept', 'zero',
     'column 0 may be the intercept'),
    (('particles.fast_exp',), 'x', 'nan',
     'elementwise like np.exp: NaN maps to NaN (documented; it runs inside compiled user energies)'),
    (('particles.fast_exp',), 'x', 'inf',
     'elementwise like np.exp: exp(inf) = inf and exp(x > 709) = inf (documented)'),
    (('effective_theory.wilson_interval',), 'successes', 'empty',
     'elementwise over the counts'),
    (('effective_theory.wilson_interval',), 'successes', 'extra dim',
     'elementwise over the counts'),
    (('effective_theory.wilson_interval',), 'successes', 'scalar',
     'elementwise over the counts'),
    (('particles.fast_exp',), 'x', 'scalar',
     'elementwise: a scalar maps to a scalar'),
    (('particles.fast_exp',), 'x', 'empty',
     'elementwise: an empty array maps to an empty array'),
    (('particles.fast_exp',), 'x', 'extra dim',
     'elementwise: any shape'),
    (('effective_theory.classify_phase',), 't_train', 'inf',
     'inf: never reached (documented)'),
    (('effective_theory.classify_phase',), 't_val', 'inf',
     'inf: never reached (documented)'),
    (('particles.EffectiveLoss.classification',
      'particles.PairDataset',
      'particles.PairEnergy.pair_forces_reference',
      'particles.energy_reference',
      'particles.forces_reference',
      'particles.label_constraints',
     ), 'labels', 'negative',
     'labels are arbitrary integer class ids'),
    (('fitting.BootstrapEnsemble.member',), 'i', 'zero',
     'member 0 is the first member'),
    (('particles.SweepTable.to_csv', 'particles.Trajectory.save'), 'path', 'missing folder',
     'missing parent folders are created (documented)'),
    (('particles.SweepTable.rates',), 'by', 'empty',
     'no grouping columns: one group of all runs'),
    (('particles.Trajectory',), 'steps', 'empty',
     'no per-step series'),
    (('effective_theory.unique_structure_probability',), 'bootstrap', 'zero',
     'no resampling: critical_fraction_interval is None (documented)'),
    (('particles.label_constraints',), 'labels', 'empty',
     'no samples: a 0 x 0 constraint matrix'),
    (('particles.warmup',), 'parts', 'empty',
     'nothing to compile'),
    (('fitting.initial_gradient', 'fitting.survival_table'), 'step', 'zero',
     'step 0 is the first difference'),
    (('particles.simulate',), 'record_every', 'huge',
     'a stride longer than the run records the start and the final state (documented)'),
    (('effective_theory.wilson_interval',), 'n', 'huge',
     'any count of trials is valid; the interval is arithmetic'),
    (('particles.unit_term_forces',), 'terms', 'None', 'None: every term of the law (documented)'),
    (('fitting.ForceLawFit',), 'terms', 'None', "None: every term of the law (documented)"),
    (('fitting.ForceLawFit',), 'ranges', 'None', "None: the fitted terms' ranges (documented)"),
    (('fitting.ForceLawFit',), 'ranges', 'empty', '(): keep the law\'s ranges, no search (documented)'),
    (('fitting.ForceLawFit',), 'bounds', 'None', 'None: each range from /10 to x10 (documented)'),
    (('fitting.ForceLawFit',), 'normalize', 'None', 'None: the forces as given (documented)'),
    (('fitting.ForceLawFit',), 'n_bootstrap', 'zero', '0: no intervals (documented)'),
    (('fitting.ForceLawFit',), 'search_snapshots', 'huge', 'more than the data: every snapshot is used'),
    (('fitting.ForceLawFit',), 'max_evaluations', 'huge', 'a limit: the search stops when it converges'),
    (('fitting.ForceLawFit.fit', 'fitting.ForceLawFit.score'), 'steps', 'None', 'None: 0 .. T-1 (documented)'),
    (('fitting.ForceLawFit.fit',), 'window', 'None', 'None: every snapshot (documented)'),
    (('fitting.ForceLawFit.predict', 'fitting.ForceLawFit.score', 'fitting.ForceLawFit.simulate'), 'train', 'None',
     "None: the fitted run's training set (documented)"),
    (('fitting.n_frequencies',), 'p', 'huge',
     '(p - 1) // 2, arithmetic without allocation'),
    (('fitting.survival_ode_analysis',), 'n_steps', 'huge',
     'a window longer than the data fits every recorded step; the held-out R^2 is then None (documented)'),
    (('fitting.WeakForm',), 'min_windows', 'huge',
     'a floor on windows per run: runs too short for it use the shortest window, 2 * order + 3 (documented)'),
    (('particles.fast_exp',), 'x', 'huge values',
     'fast_exp(x) is inf above x = 709, like np.exp (documented)'),
    (('particles.Trajectory',), 'embeddings', 'huge values',
     'a container: it stores any finite values (energies and Z of valid runs can exceed the 1e100 input bound)'),
    (('particles.PairTerm.values',), 'q', 'huge values',
     'q is a derived quantity (r^2 or a cosine): any finite value is valid, the law decides what it gives'),
]
ACCEPTED += [(entries, param, label, reason) for entries, param in SEEDED for label, reason in (
    ("zero", "0 is a valid seed"),
    ("huge", "any non-negative int is a seed (numpy's SeedSequence takes ints of any size)"))]
#: (entry, parameter) -> {bad-value label: why it is a documented, valid input}
ACCEPT: dict[tuple[str, str], dict[str, str]] = {}
for _entries, _param, _label, _reason in ACCEPTED:
    for _name in _entries:
        ACCEPT.setdefault((_name, _param), {})[_label] = _reason


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="bad-input-"))


def registry() -> dict[str, tuple[Callable, dict[str, Any]]]:
    """name -> (callable, good keyword arguments): one working call per entry."""
    rng = np.random.default_rng(0)
    E7 = rng.normal(size=(7, 2))
    D7 = pt.modular_addition(7)
    A7 = pt.constraint_matrix(pt.addition(5))
    SIG = np.abs(rng.normal(size=(40, 3))) + 1.0
    T = np.linspace(0.0, 3.0, 61)
    X = np.column_stack([np.exp(-T), 2.0 * np.exp(-0.5 * T)])
    tmp = _tmp()
    # The values below compile nothing: every test worker builds this registry when it collects the tests, and a
    # simulation or a fit here compiled the Euler loop, the force kernels and the term kernels in each worker before
    # any test ran (about 50 s of a cold start). The good calls themselves compile when a test runs them.
    steps = np.array([0, 2, 4])
    traj = pt.Trajectory(embeddings=np.stack([E7, 0.9 * E7, 0.8 * E7]), snapshot_steps=steps, steps=steps,
                         scalars={"energy": np.array([1.0, 0.8, 0.7])})
    traj_path = traj.save(tmp / "good.npz")
    # a run with signals at 60 steps (K = 5) whose frequency 2 takes over, and the network's curves
    st_steps = np.arange(60)
    st_sig = np.ones((60, 5))
    st_sig[:, 1] += 4.0 / (1.0 + np.exp(-(st_steps - 30) / 3.0))
    st_curve = 1.0 / (1.0 + np.exp(-(st_steps - 20) / 2.0))
    st_traj = pt.Trajectory(embeddings=rng.normal(size=(2, 11, 3)), snapshot_steps=[0, 59], steps=st_steps,
                            signals=st_sig, curves={"train_acc": (st_steps, 0.02 + 0.98 * st_curve),
                                                    "val_acc": (st_steps, 0.02 + 0.98 * st_curve ** 0.5)})
    table = pt.SweepTable(rows=[{"wd": 0.1, "seed": 0, "structure": "circle", "circularity": 0.9},
                                {"wd": 0.2, "seed": 0, "structure": "none", "circularity": 0.1}],
                          parameters=["wd"])
    csv_path = table.to_csv(tmp / "good.csv")
    law = pt.gaussian_clustering(k_a=3.0, sig_a=3.0, k_r=1.0, sig_r=1.0, wd=0.1)
    term = law.distance
    tiny = pt.preset("circles").replace(p=5, steps=4, record_every=2)

    # force-law fits: forces of a known law (the NumPy reference) on five states near E7; the fit made when first used
    FX = E7 + 0.1 * np.random.default_rng(1).normal(size=(5, 7, 2))
    FG = np.stack([pt.forces_reference(x, D7.pairs, D7.labels, pt.ForceParams(lam=1.0)) for x in FX])

    @functools.cache
    def ffit():
        return ft.ForceLawFit(ranges=(), n_bootstrap=5).fit(FX, FG, train=D7)

    def fitted(cls=ft.LinearODE, **kw):
        return cls(**kw).fit(X, T)

    linear = fitted(derivative="central")
    windowed = fitted(derivative="central", window=(0.0, 2.0))
    lv = fitted(ft.LotkaVolterra, derivative="central")
    ens = ft.BootstrapEnsemble(ft.LinearODE(derivative="central"), n_models=3, random_state=0).fit(X, T)
    theta = np.column_stack([np.ones_like(T), X])

    def fit_with(make: Callable[..., Any], key: str) -> Callable[..., Any]:
        def call(**kw):
            return ft.LinearODE(**{key: make(**kw)}).fit(X, T)
        return call

    good: dict[str, tuple[Callable, dict[str, Any]]] = {
        # ------------------------------------------------------------ particles: functions
        "particles.addition": (pt.addition, {"p": 5}),
        "particles.best_circularity": (pt.best_circularity, {"E": E7}),
        "particles.force_terms": (pt.force_terms, {"law": pt.ForceParams(lam=1.0), "x": E7, "train": D7}),
        "particles.term_names": (pt.term_names, {"law": pt.ForceParams()}),
        "particles.unit_term_forces": (pt.unit_term_forces, {"law": pt.ForceParams(lam=1.0), "X": E7[None],
                                                              "train": D7, "terms": ["attraction"]}),
        "particles.circularity": (pt.circularity, {"E": E7, "frequency": 2}),
        "particles.classify_structure": (pt.classify_structure, {"E": E7, "dataset": D7}),
        "particles.energy": (pt.energy, {"x": E7, "train": D7, "params": pt.ForceParams()}),
        "particles.energy_and_forces": (pt.energy_and_forces, {"x": E7, "train": D7, "params": pt.ForceParams()}),
        "particles.energy_reference": (pt.energy_reference, {"x": E7, "pairs": D7.pairs, "labels": D7.labels,
                                                              "params": pt.ForceParams()}),
        "particles.forces": (pt.forces, {"x": E7, "train": D7, "params": pt.ForceParams()}),
        "particles.forces_reference": (pt.forces_reference, {"x": E7, "pairs": D7.pairs, "labels": D7.labels,
                                                              "params": pt.ForceParams()}),
        "particles.grid_defects": (pt.grid_defects, {"E": E7, "dataset": D7}),
        "particles.line_ratio": (pt.line_ratio, {"E": E7}),
        "particles.fourier_plane_share": (pt.fourier_plane_share, {"E": E7, "frequency": 2}),
        "particles.make_rng": (pt.make_rng, {"seed": 3}),
        "particles.minimize": (pt.minimize, {"x0": E7, "train": D7, "params": pt.ForceParams(), "max_steps": 20,
                                             "gtol": 1e-6, "step": 0.01}),
        "particles.modular_addition": (pt.modular_addition, {"p": 5, "ordered": False}),
        "particles.pair_sum_accuracy": (pt.pair_sum_accuracy, {"E": E7, "dataset": D7, "metric": "euclidean"}),
        "particles.permutation_group": (pt.permutation_group, {"n": 3}),
        "particles.preset": (pt.preset, {"name": "circles"}),
        "particles.simulate": (pt.simulate, {"x0": E7, "train": D7, "params": pt.ForceParams(), "steps": 5,
                                             "dt": 0.01, "record_every": 5}),
        "particles.structure_metrics": (pt.structure_metrics, {"E": E7, "dataset": D7}),
        "particles.centroid_sum": (pt.centroid_sum, {"E": E7}),
        "particles.effective_loss": (pt.effective_loss, {"E": E7[:5], "system": pt.addition(5),
                                                         "normalization": "centred"}),
        "particles.effective_loss_gradient": (pt.effective_loss_gradient, {"E": E7[:5], "system": pt.addition(5),
                                                                            "normalization": "centred"}),
        "particles.effective_loss_reference": (pt.effective_loss_reference, {"E": E7[:5], "A": A7,
                                                                              "normalization": "centred"}),
        "particles.simulate_effective": (pt.simulate_effective, {"E0": E7[:5], "train": pt.addition(5), "steps": 5,
                                                                 "dt": 0.01}),
        "particles.spread": (pt.spread, {"E": E7, "normalization": "centred"}),
        "particles.constraint_matrix": (pt.constraint_matrix, {"data": pt.addition(5)}),
        "particles.label_constraints": (pt.label_constraints, {"labels": np.array([0, 1, 0, 1])}),
        "particles.parallelograms": (pt.parallelograms, {"data": pt.addition(5)}),
        "particles.fast_exp": (pt.fast_exp, {"x": np.array([-1.0, 0.5])}),
        "particles.gaussian_clustering": (pt.gaussian_clustering, {"k_a": 3.0, "sig_a": 3.0, "k_r": 1.0,
                                                                   "sig_r": 1.0, "wd": 0.1}),
        "particles.cosine_alignment": (pt.cosine_alignment, {"lam": 1.0, "sig_t": 0.2, "eps": 1.0}),
        # ------------------------------------------------------------ particles: classes and methods
        "particles.ForceParams": (pt.ForceParams, {"k_a": 3.0, "sig_a": 3.0, "k_r": 1.0, "sig_r": 1.0, "lam": 0.5,
                                                   "sig_t": 0.2, "eps": 1.0, "wd": 0.1, "alignment": "gradient",
                                                   "alignment_form": "cosine", "wd_target": "classifier",
                                                   "bias_scale": 1.0, "particle_wd": 0.1}),
        "particles.ForceParams.replace": (lambda **kw: pt.ForceParams().replace(**kw), {"k_a": 2.0, "wd": 0.2}),
        "particles.PairDataset": (pt.PairDataset, {"pairs": D7.pairs, "labels": D7.labels, "p": 7,
                                                   "name": "sums", "indices": np.arange(len(D7))}),
        "particles.PairDataset.split": (D7.split, {"fraction": 0.5, "seed": 1}),
        "particles.PairDataset.subset": (D7.subset, {"rows": np.array([0, 2, 3])}),
        "particles.Preset.replace": (tiny.replace, {"steps": 6, "dt": 0.02}),
        "particles.Preset.run": (tiny.run, {"seed": 1}),
        "particles.Preset.sample": (tiny.sample, {"seed": 1}),
        "particles.SweepTable": (lambda **kw: pt.SweepTable(**kw).rates(),
                                 {"rows": table.rows, "parameters": ["wd"]}),
        "particles.SweepTable.column": (table.column, {"name": "circularity"}),
        "particles.SweepTable.rates": (table.rates, {"by": ["wd"]}),
        "particles.SweepTable.from_csv": (pt.SweepTable.from_csv, {"path": csv_path, "parameters": ["wd"]}),
        "particles.SweepTable.to_csv": (table.to_csv, {"path": tmp / "out.csv"}),
        "particles.Trajectory": (pt.Trajectory, {"embeddings": traj.embeddings, "snapshot_steps": traj.snapshot_steps,
                                                 "steps": traj.steps, "signals": None}),
        "particles.Trajectory.save": (traj.save, {"path": tmp / "saved.npz", "compress": True}),
        "particles.Trajectory.load": (pt.Trajectory.load, {"path": traj_path}),
        "particles.Trajectory.with_train": (traj.with_train, {"train": D7}),
        "particles.EffectiveLoss.from_matrix": (pt.EffectiveLoss.from_matrix, {"A": A7}),
        "particles.EffectiveLoss.from_pairs": (pt.EffectiveLoss.from_pairs, {"train": pt.addition(5)}),
        "particles.EffectiveLoss.classification": (pt.EffectiveLoss.classification,
                                                   {"labels": np.array([0, 1, 0, 1])}),
        "particles.PairEnergy": (pt.PairEnergy, {"distance": term, "eps": 1.0, "wd": 0.1, "name": "law"}),
        "particles.PairEnergy.replace": (law.replace, {"wd": 0.2}),
        "particles.PairEnergy.pair_forces_reference": (law.pair_forces_reference,
                                                       {"s": E7[D7.pairs[:, 0]] + E7[D7.pairs[:, 1]],
                                                        "labels": D7.labels}),
        "particles.warmup": (pt.warmup, {"parallel": False, "parts": ("effective",)}),
        "particles.PairTerm": (pt.PairTerm, {"same": term.same, "other": term.other, "variable": "distance",
                                             "params": term.params}),
        "effective_theory.constraint_matrix": (et.constraint_matrix, {"data": pt.addition(5)}),
        "effective_theory.parallelograms": (et.parallelograms, {"data": pt.addition(5)}),
        "fitting.survival_table": (ft.survival_table, {"signals": [SIG, SIG * 1.1], "dcs": [0.5, 0.5],
                                                      "factor": 2.0, "step": 4}),
        "particles.PairTerm.values": (term.values, {"q": np.array([0.5, 1.0]), "same": np.array([True, False])}),
        "particles.PairTerm.with_params": (term.with_params, {"params": type(term.params)(3.0, 3.0, 1.0, 1.0)}),
        # ------------------------------------------------------------ effective_theory
        "effective_theory.degeneracy": (et.degeneracy, {"data": pt.addition(5)}),
        "effective_theory.grokking_rate": (et.grokking_rate, {"data": pt.addition(5), "Z": 1.0}),
        "effective_theory.grokking_rate_curve": (et.grokking_rate_curve, {"p": 5, "fractions": np.array([0.5, 1.0]),
                                                                          "samples": 3, "seed": 0}),
        "effective_theory.hessian_spectrum": (et.hessian_spectrum, {"data": pt.addition(5), "k": 3}),
        "effective_theory.laplacian_spectrum": (et.laplacian_spectrum, {"data": pt.addition(5), "k": 3}),
        "effective_theory.nullity": (et.nullity, {"A": A7}),
        "effective_theory.predicted_steps": (et.predicted_steps, {"data": pt.addition(5), "eta": 0.5, "Z": 1.0}),
        "effective_theory.rank": (et.rank, {"A": A7}),
        "effective_theory.unique_structure_probability": (et.unique_structure_probability,
                                                          {"p": 5, "samples": 5, "seed": 0, "bootstrap": 5}),
        "effective_theory.wilson_interval": (et.wilson_interval, {"successes": np.array([1, 3]), "n": 5,
                                                                  "confidence": 0.95}),
        "effective_theory.classify_phase": (et.classify_phase, {"t_train": 100.0, "t_val": 5000.0, "budget": 1e5,
                                                                "gap": 1e3}),
        "effective_theory.normalized_embedding": (et.normalized_embedding, {"E": E7}),
        "effective_theory.predicted_accuracy": (et.predicted_accuracy, {"E": E7[:5], "train": pt.addition(5),
                                                                        "dataset": pt.addition(5), "delta2": 0.01}),
        "effective_theory.realised_parallelograms": (et.realised_parallelograms,
                                                     {"E": E7[:5], "dataset": pt.addition(5), "delta2": 0.01}),
        "effective_theory.rqi": (et.rqi, {"E": E7[:5], "dataset": pt.addition(5), "delta2": 0.01}),
        "effective_theory.rqi_series": (et.rqi_series, {"embeddings": np.stack([E7[:5], E7[:5]]),
                                                        "dataset": pt.addition(5), "delta2": 0.01}),
        "effective_theory.GrokkingRateCurve.quantiles": (
            et.grokking_rate_curve(5, np.array([0.5, 1.0]), samples=3, seed=0).quantiles, {"q": 0.5}),
        # ------------------------------------------------------------ fitting: functions
        "fitting.differentiate": (ft.differentiate, {"x": SIG, "t": 1.0, "method": "forward"}),
        "fitting.fitness_correlation": (ft.fitness_correlation, {"rate": np.array([0.1, 0.5, 0.9, 0.2]),
                                                                 "signal": np.array([1.0, 2.0, 4.0, 1.5])}),
        "fitting.fourier_signals": (ft.fourier_signals, {"E": E7, "power": 1, "p": 7}),
        "fitting.frequency_circularity": (ft.frequency_circularity, {"E": E7}),
        "fitting.initial_gradient": (ft.initial_gradient, {"signals": SIG, "step": 4}),
        "fitting.initial_signal": (ft.initial_signal, {"signals": SIG}),
        "fitting.linear_solution": (ft.linear_solution, {"A": -np.eye(2), "b": np.zeros(2), "x0": np.ones(2),
                                                         "t": np.array([0.0, 1.0])}),
        "fitting.n_frequencies": (ft.n_frequencies, {"p": 7}),
        "fitting.survival_rate": (ft.survival_rate, {"survived": np.array([[True, False], [True, True]])}),
        "fitting.surviving_frequencies": (ft.surviving_frequencies, {"signals": SIG, "factor": 2.0, "dc": 0.0}),
        "fitting.survival_ode_analysis": (ft.survival_ode_analysis, {"signals": SIG, "n_steps": 20, "alpha": 0.01}),
        "fitting.trajectory_signals": (ft.trajectory_signals, {"traj": traj, "power": 1}),
        "fitting.key_frequencies": (ft.key_frequencies, {"x": SIG, "ratio": 2.0, "power": 1}),
        "fitting.stages": (ft.stages, {"trajectory": st_traj, "frequencies": "auto", "levels": (0.1, 0.9)}),
        "fitting.network_curves": (ft.network_curves, {"traj": st_traj}),
        "fitting.fit_windows": (ft.fit_windows, {"model": ft.LinearODE(regressor="ols", derivative="central"),
                                                 "trajectory": st_traj, "windows": [0, 30, 60],
                                                 "frequencies": "all"}),
        "fitting.select_frequencies": (ft.select_frequencies, {"x": SIG, "frequencies": "auto", "factor": 2.0,
                                                               "ratio": 2.0}),
        # ------------------------------------------------------------ fitting: estimators and plug-ins
        "fitting.ODEModel": (lambda **kw: ft.ODEModel(**kw).fit(X, T),
                             {"library": "linear", "regressor": "stlsq", "alpha": 0.05, "derivative": "central",
                              "window": (0.0, 2.0), "debias": False, "blowup_factor": 1000.0}),
        "fitting.explore.make_app": (fe.make_app, {"trajectories": [traj_path], "phases": [csv_path]}),
        "fitting.ForceLawFit": (lambda **kw: ft.ForceLawFit(**kw).fit(FX, FG, train=D7),
                                {"law": "builtin", "terms": ["attraction", "repulsion"], "ranges": ["sig_a"],
                                 "bounds": {"sig_a": (1.0, 5.0)}, "target": "gradient", "normalize": "rms",
                                 "nonnegative": True, "n_bootstrap": 5, "bootstrap": "snapshots",
                                 "search_snapshots": 3, "max_evaluations": 5, "windows": 2,
                                 "tie_alignment": False, "seed": 1}),
        "fitting.ForceLawFit.fit": (ft.ForceLawFit(ranges=(), n_bootstrap=5).fit,
                                    {"X": FX, "G": FG, "train": D7, "steps": np.arange(len(FX)) * 10,
                                     "window": (0, 40)}),
        "fitting.ForceLawFit.predict": (lambda **kw: ffit().predict(**kw), {"X": FX, "train": D7}),
        "fitting.ForceLawFit.score": (lambda **kw: ffit().score(**kw),
                                      {"X": FX, "G": FG, "train": D7, "steps": np.arange(len(FX))}),
        "fitting.ForceLawFit.simulate": (lambda **kw: ffit().simulate(**kw),
                                         {"x0": FX[0], "steps": 3, "dt": 0.01, "train": D7}),
        "fitting.LinearODE": (lambda **kw: ft.LinearODE(**kw).fit(X, T),
                              {"regressor": "ols", "derivative": "central", "stable": False}),
        "fitting.LotkaVolterra": (lambda **kw: ft.LotkaVolterra(**kw).fit(X, T),
                                  {"form": "general", "derivative": "central"}),
        "fitting.LotkaVolterra.jacobian": (lv.jacobian, {"x": X[0]}),
        "fitting.ODEModel.fit": (ft.LinearODE(derivative="central").fit, {"x": X, "t": T, "names": ["a", "b"]}),
        "fitting.LotkaVolterra.fit": (ft.LotkaVolterra(derivative="central").fit, {"x": X, "t": T,
                                                                                   "names": ["a", "b"]}),
        "fitting.ODEModel.fit_with_rows": (ft.LinearODE(derivative="central").fit_with_rows, {"x": X, "t": T, "names": ["a", "b"]}),
        "fitting.LotkaVolterra.fit_with_rows": (ft.LotkaVolterra(derivative="central").fit_with_rows, {"x": X, "t": T,
                                                                                   "names": ["a", "b"]}),
        "fitting.SimulationScoresMixin.forecast": (windowed.forecast, {"x": X, "t": T, "start": 2.0, "horizon": 0.5,
                                                          "method": "auto"}),
        "fitting.SimulationScoresMixin.forecast_score": (windowed.forecast_score, {"x": X, "t": T, "start": 2.0,
                                                                      "horizon": 0.5}),
        "fitting.ODEModel.predict": (linear.predict, {"x": X}),
        "fitting.ODEModel.score": (linear.score, {"x": X, "t": T, "window": (0.0, 2.0),
                                                  "multioutput": "uniform_average"}),
        "fitting.ODEModel.simulate": (linear.simulate, {"x0": X[0], "t": T, "method": "auto", "rtol": 1e-8,
                                                        "atol": 1e-10}),
        "fitting.SimulationScoresMixin.trajectory_score": (linear.trajectory_score, {"x": X, "t": T, "window": (0.0, 2.0),
                                                                        "method": "auto",
                                                                        "multioutput": "variance_weighted"}),
        "fitting.EquationsMixin.equations": (linear.equations, {"names": ["a", "b"], "precision": 3, "threshold": 0.01}),
        "fitting.EquationsMixin.feature_names": (linear.feature_names, {"names": ["a", "b"]}),
        "fitting.EquationsMixin.named_coefficients": (linear.named_coefficients, {"names": ["a", "b"],
                                                                            "threshold": 0.01}),
        "fitting.BootstrapEnsemble": (lambda **kw: ft.BootstrapEnsemble(**kw).fit(X, T),
                                      {"estimator": ft.LinearODE(derivative="central"), "n_models": 3,
                                       "resample": "auto", "confidence": 0.9, "random_state": 1}),
        "fitting.BootstrapEnsemble.fit": (ft.BootstrapEnsemble(ft.LinearODE(derivative="central"), n_models=3,
                                                               random_state=0).fit, {"x": X, "t": T}),
        "fitting.BootstrapEnsemble.predict": (ens.predict, {"x": X}),
        "fitting.BootstrapEnsemble.simulate": (ens.simulate, {"x0": X[0], "t": T, "method": "auto"}),
        "fitting.BootstrapEnsemble.member": (ens.member, {"i": 1}),
        "fitting.BootstrapEnsemble.intervals": (ens.intervals, {"names": ["a", "b"], "threshold": 0.5}),
        "fitting.OLS": (fit_with(ft.OLS, "regressor"), {"standardize": True}),
        "fitting.STLSQ": (fit_with(ft.STLSQ, "regressor"), {"threshold": 0.1, "ridge": 0.01, "max_iter": 20,
                                                            "standardize": True}),
        "fitting.Lasso": (fit_with(ft.Lasso, "regressor"), {"alpha": 0.001, "standardize": True, "max_iter": 1000,
                                                            "tol": 1e-4}),
        "fitting.LassoCV": (fit_with(ft.LassoCV, "regressor"), {"cv": 3, "standardize": True, "max_iter": 1000}),
        "fitting.Regressor.fit": (ft.OLS().fit, {"Theta": theta, "Y": -X, "mask": np.ones((2, 3), dtype=bool),
                                                 "intercept": 0}),
        "fitting.PolynomialLibrary": (lambda **kw: ft.ODEModel(library=ft.PolynomialLibrary(**kw),
                                                               derivative="central").fit(X, T),
                                      {"degree": 2, "include_bias": True}),
        "fitting.FourierLibrary": (lambda **kw: ft.ODEModel(library=ft.FourierLibrary(**kw),
                                                            derivative="central").fit(X, T), {"n_frequencies": 1}),
        "fitting.CustomLibrary": (lambda **kw: ft.ODEModel(library=ft.CustomLibrary(**kw),
                                                           derivative="central").fit(X, T),
                                  {"functions": [np.tanh], "names": ["tanh({})"]}),
        "fitting.Library.transform": (ft.PolynomialLibrary(2).transform, {"X": X}),
        "fitting.PolynomialLibrary.feature_names": (ft.PolynomialLibrary(2).feature_names, {"names": ["a", "b"]}),
        "fitting.FourierLibrary.feature_names": (ft.FourierLibrary(1).feature_names, {"names": ["a", "b"]}),
        "fitting.CustomLibrary.feature_names": (ft.CustomLibrary([np.tanh]).feature_names, {"names": ["a", "b"]}),
        "fitting.PolynomialLibrary.powers": (ft.PolynomialLibrary(2).powers, {"K": 2}),
        "fitting.PolynomialLibrary.degrees": (ft.PolynomialLibrary(2).degrees, {"K": 2}),
        "fitting.PolynomialLibrary.bias_column": (ft.PolynomialLibrary(2).bias_column, {"K": 2}),
        "fitting.Library.degrees": (ft.FourierLibrary(1).degrees, {"K": 2}),
        "fitting.PolynomialLibrary.product_plan": (ft.PolynomialLibrary(2).product_plan, {"K": 2}),
        "fitting.Library.product_plan": (ft.FourierLibrary(1).product_plan, {"K": 2}),
        "fitting.Library.bias_column": (ft.FourierLibrary(1).bias_column, {"K": 2}),
        "fitting.Library.n_features": (ft.FourierLibrary(1).n_features, {"K": 2}),
        "fitting.FiniteDifference": (fit_with(ft.FiniteDifference, "derivative"), {"order": 2}),
        "fitting.SavitzkyGolay": (fit_with(ft.SavitzkyGolay, "derivative"), {"window_length": 7, "polyorder": 3}),
        "fitting.WeakForm": (fit_with(ft.WeakForm, "derivative"), {"window": 12, "stride": 3, "order": 4,
                                                                   "min_windows": 12, "period_fraction": 0.25,
                                                                   "weighting": "covariance"}),
        "fitting.FlowMap": (fit_with(ft.FlowMap, "derivative"), {"horizon": 2}),
        "fitting.FiniteDifference.derivative": (ft.FiniteDifference(2).derivative, {"x": X, "t": T}),
        "fitting.SavitzkyGolay.derivative": (ft.SavitzkyGolay(7, 3).derivative, {"x": X, "t": T}),
        "fitting.survival_classifier": (ft.survival_classifier,
                                        {"features": np.column_stack([np.linspace(0, 1, 40),
                                                                      np.linspace(1, 0, 40) ** 2]),
                                         "survived": np.arange(40) % 2 == 0, "test_size": 0.25, "rng": 0, "C": 1.0}),
    }
    return good


def backend_registry() -> dict[str, tuple[Callable, dict[str, Any]]]:
    """Entries of fitting.training (needs torch)."""
    import fitting.training as fb

    tiny = fb.config_for("toy", steps=4, snapshot_every=2, p=5)
    return {
        "fitting.training.config_for": (fb.config_for, {"model": "toy", "steps": 4}),
        "fitting.training.ToyConfig": (fb.ToyConfig, {"steps": 4, "snapshot_every": 2, "dtype": "float64", "p": 5,
                                                     "d": 1, "hidden": 8, "task": "regression", "group": "addition",
                                                     "target_dim": 4, "embedding_lr": 1e-3, "decoder_lr": 1e-4,
                                                     "embedding_weight_decay": 0.1, "decoder_weight_decay": 0.1,
                                                     "train_fraction": 0.5}),
        "fitting.training.TrainingConfig.replace": (tiny.replace, {"steps": 6}),
        "fitting.training.train": (fb.train, {"config": tiny, "seed": 1, "out": None}),
    }


def public_api(include_backend: bool = True) -> dict[str, Callable]:
    """Every exported function, class and public method that takes
    parameters, by name ("package.name", "package.Class",
    "package.Class.method" with the class that defines the method)."""
    import importlib

    found: dict[str, Callable] = {}
    packages = PACKAGES if include_backend else PACKAGES[:-1]
    for package in packages:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or (callable(obj) and hasattr(obj, "__wrapped__")):
                if _takes_parameters(obj):
                    found[f"{package}.{name}"] = obj
            elif inspect.isclass(obj) and not issubclass(obj, BaseException):
                if _takes_parameters(obj):
                    found[f"{package}.{name}"] = obj
                for attr in dir(obj):
                    if attr.startswith("_"):
                        continue
                    raw = inspect.getattr_static(obj, attr)
                    if not (inspect.isfunction(raw) or isinstance(raw, (classmethod, staticmethod))):
                        continue
                    method = getattr(obj, attr)
                    owner = method.__qualname__.split(".")[0]
                    if not method.__module__.split(".")[0] in ("particles", "effective_theory", "fitting"):
                        continue
                    if _takes_parameters(method, skip_first=inspect.isfunction(raw)):
                        found[f"{package}.{owner}.{attr}"] = method
    return found


def _takes_parameters(obj: Callable, skip_first: bool = False) -> bool:
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return False
    if skip_first:
        params = params[1:]
    return any(p.kind not in (p.VAR_KEYWORD,) for p in params) or any(p.kind == p.VAR_KEYWORD for p in params)


def bad_values(good: Any) -> list[tuple[str, Any]]:
    """Fixed bad values of the same kind as ``good``, as (label, value)."""
    common = [("None", None), ("object", object()), ("string", "bad")]
    if isinstance(good, (bool, np.bool_)):
        return [("int 2", 2), ("string", "yes"), ("None", None)]
    if isinstance(good, (int, np.integer)):
        return common + [("negative", -1), ("huge", 10**12), ("float", 2.5), ("nan", float("nan")),
                         ("numeric string", "5"), ("bool", True)] + ([("zero", 0)] if good > 0 else [])
    if isinstance(good, (float, np.floating)):
        return common + [("nan", float("nan")), ("inf", float("inf")), ("-inf", -float("inf")), ("huge", 1e300),
                         ("complex", 1 + 1j), ("bool", True)] + ([("negative", -1.0)] if good > 0 else [])
    if isinstance(good, str):
        return [("unknown", "no-such-choice"), ("int", 5), ("None", None)]
    if isinstance(good, Path):
        return [("int", 3), ("None", None), ("empty", ""), ("missing folder", good.parent / "no" / "such" / good.name)]
    if isinstance(good, np.ndarray):
        out = common[:2] + [("empty", np.array([])), ("scalar", np.float64(1.0)), ("extra dim", good[None]),
                            ("strings", good.astype(str)), ("objects", good.astype(object))]
        if good.ndim >= 2 and good.shape[0] > 0:  # the same number of dimensions, no rows ("empty" is 1-D)
            out += [("no rows", good[:0])]
        if good.dtype.kind in "iuf":  # a NumPy integer subtype, refused by kind rather than cast
            out += [("timedelta", np.zeros(good.shape, dtype="m8[s]"))]
        if good.dtype.kind in "fc":
            nan = good.copy()
            nan.flat[0] = np.nan
            inf = good.copy()
            inf.flat[-1] = np.inf
            out += [("nan", nan), ("inf", inf), ("complex", good + 1j), ("huge values", np.full_like(good, 1e300)),
                    ("list with NaN", nan.tolist())]
        elif good.dtype.kind in "iu":
            out += [("negative", good - 100), ("float", good + 0.5), ("complex", good + 1j)]
        elif good.dtype.kind == "b":
            out += [("ints", good.astype(int) + 2)]
        return out
    if hasattr(good, "_fields"):  # a NamedTuple of parameters
        return common + [("empty", ()), ("nested None", type(good)(*[None] * len(good)))]
    if isinstance(good, (list, tuple)):
        return common + [("empty", type(good)()), ("nested None", type(good)([None] * max(len(good), 1)))]
    return common + [("int", 5)]


def non_finite(value: Any, depth: int = 0) -> bool:
    """Whether a returned value holds NaN or inf anywhere we can see."""
    if depth > 3:
        return False
    if isinstance(value, (float, np.floating)):
        return not np.isfinite(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return not np.all(np.isfinite(value))
    if isinstance(value, dict):
        return any(non_finite(v, depth + 1) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(non_finite(v, depth + 1) for v in value[:50])
    if hasattr(value, "__dataclass_fields__"):
        return any(non_finite(getattr(value, f), depth + 1) for f in value.__dataclass_fields__)
    return False


class Slow(Exception):
    """A call outlived its time limit."""


def _alarm(signum, frame):
    raise Slow()


def classify(name: str, fn: Callable, kwargs: dict[str, Any], param: str, label: str, bad: Any,
             timeout: float = 10.0) -> tuple[str, str]:
    """Outcome and detail of ``fn(**kwargs)`` with ``param`` set to ``bad``."""
    args = dict(kwargs)
    args[param] = bad
    previous = signal.signal(signal.SIGALRM, _alarm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            result = fn(**args)
        except Slow:
            return "slow", f"still running after {timeout:g} s"
        except (ValueError, TypeError) as exc:
            return ("named" if param in str(exc) else "unnamed"), f"{type(exc).__name__}: {str(exc)[:160]}"
        except Exception as exc:  # noqa: BLE001 - classifying every failure is the point
            if label in ACCEPT.get((name, param), {}):
                return "accepted", f"{ACCEPT[(name, param)][label]} ({type(exc).__name__})"
            return "other", f"{type(exc).__name__}: {str(exc)[:160]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    if non_finite(result) and label not in ACCEPT.get((name, param), {}):
        return "nonfinite", ""
    if label in ACCEPT.get((name, param), {}):
        return "accepted", ACCEPT[(name, param)][label]
    return "finite", "returned without complaint"


def cases(entries: dict[str, tuple[Callable, dict[str, Any]]]) -> Iterator[tuple[str, str, str, Any]]:
    for name, (fn, kwargs) in entries.items():
        for param, good in kwargs.items():
            for label, bad in bad_values(good):
                yield name, param, label, bad


def all_entries(backend: bool) -> dict[str, tuple[Callable, dict[str, Any]]]:
    """:func:`registry`, with :func:`backend_registry` when ``backend`` (torch installed)."""
    entries = registry()
    if backend:
        entries.update(backend_registry())
    return entries


def run(timeout: float = 10.0, skip: tuple[str, ...] = (), backend: bool = True) -> dict[str, Any]:
    entries = all_entries(backend)
    api = public_api(include_backend=backend)
    missing = sorted(set(api) - set(entries) - set(SKIP))
    outcomes: Counter = Counter()
    problems: list[dict[str, Any]] = []
    messages: dict[str, dict[str, list[str]]] = {}
    for name, (fn, kwargs) in entries.items():
        fn(**kwargs)  # the good call works
    for name, param, label, bad in cases(entries):
        if label in skip:
            continue
        fn, kwargs = entries[name]
        kind, detail = classify(name, fn, kwargs, param, label, bad, timeout)
        outcomes[kind] += 1
        if kind == "named":
            messages.setdefault(name, {}).setdefault(param, []).append(detail)
        if kind not in ("named", "accepted"):
            problems.append({"call": name, "parameter": param, "bad": label, "outcome": kind, "detail": detail})
    bad_calls = sum(v for k, v in outcomes.items() if k != "accepted")
    return {"entries": len(entries), "public_api": len(api), "skipped": len(SKIP), "calls": sum(outcomes.values()),
            "outcomes": dict(outcomes),
            "named_share": outcomes["named"] / bad_calls if bad_calls else None,
            "missing_entries": missing, "problems": problems, "messages": messages}


def _rule(message: str) -> tuple[str, str]:
    """(accepted-range text, exception type) of an error message: the text
    before ", got ...", as one table cell."""
    kind, _, text = message.partition(": ")
    for cut in (", got ", " got "):
        if cut in text:
            text = text.split(cut)[0]
            break
    return text.replace("|", "\\|").replace("\n", " ").strip(), kind


def write_markdown(report: dict[str, Any], path: str) -> None:
    """The table of docs/input_checks.md: per entry and parameter, what
    the checks say is accepted (from the messages the battery received)
    and the documented special values."""
    lines = ["| entry | parameter | what is accepted (from the error a bad value gets) | documented special values |",
             "| --- | --- | --- | --- |"]
    for name in sorted(report["messages"]):
        for param, details in report["messages"][name].items():
            rules: dict[str, list[str]] = {}
            for detail in details:
                text, kind = _rule(detail)
                if kind not in rules.setdefault(text, []):
                    rules[text].append(kind)
            cells = [f"{text} ({', '.join(kinds)})" for text, kinds in rules.items()]
            shown = "<br>".join(cells[:3]) + (f"<br>(+{len(cells) - 3} more)" if len(cells) > 3 else "")
            special = "; ".join(reason if reason.startswith(label + ":") else f"{label}: {reason}"
                                for label, reason in ACCEPT.get((name, param), {}).items())
            lines.append(f"| `{name}` | `{param}` | {shown} | {special.replace('|', '/')} |")
    text = "\n".join(lines) + "\n"
    start, end = "<!-- checks-table:start -->\n", "<!-- checks-table:end -->"
    if os.path.exists(path):  # replace the table between the markers, keep the page around it
        page = open(path).read()
        if start in page and end in page:
            text = page.split(start)[0] + start + text + end + page.split(end, 1)[1]
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=None, help="write the full report here")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a call counts as slow")
    parser.add_argument("--skip", nargs="*", default=(), help="bad-value labels to leave out, e.g. huge")
    parser.add_argument("--no-backend", action="store_true", help="leave fitting.training out (no torch)")
    parser.add_argument("--markdown", default=None, help="write the per-function table of checks here")
    args = parser.parse_args()
    report = run(args.timeout, tuple(args.skip), backend=not args.no_backend)
    if args.markdown:
        write_markdown(report, args.markdown)
    print(json.dumps({k: v for k, v in report.items() if k not in ("problems", "messages")}, indent=1))
    for p in report["problems"]:
        print(f"{p['outcome']:9s} {p['call']}({p['parameter']}={p['bad']}) {p['detail']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    sys.exit(0)


if __name__ == "__main__":
    main()
