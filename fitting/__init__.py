"""Fourier signals of embeddings, survival measures and ODE regression onto
embedding trajectories, plus an optional torch training backend.

Filled by a later issue; importable now so the distribution's layout is fixed.
"""
