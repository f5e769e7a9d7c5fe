"""Effective theory of representation learning (parallelogram constraints,
degeneracy, critical training fraction, grokking rates, RQI).

Filled by a later issue; importable now so the distribution's layout is fixed.
"""
