"""Torch threads for each worker process when a trainer splits its work
over ``n_jobs`` processes (the grid trainer's parts, the batched seeds'
groups)."""

from __future__ import annotations

import torch

__all__ = ["threads_per_job"]


def threads_per_job(n_jobs: int) -> int:
    """This process's torch threads shared out over ``n_jobs`` workers (at least 1 each)."""
    return max(1, torch.get_num_threads() // n_jobs)
