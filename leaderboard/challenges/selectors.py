"""Reads about a challenge's datasets that boards, submission pages and the API share.

Sealed Split III datasets are shown under their alias, and their scores withheld,
until the organizers reveal them; these rules are written once, here.
"""

from __future__ import annotations

from collections.abc import Iterable

from leaderboard.challenges.models import Dataset

SPLITS = ("I", "II", "III")


def dataset_label(dataset: Dataset, *, reveal_sealed: bool) -> str:
    if dataset.is_sealed and not reveal_sealed:
        return dataset.sealed_alias or "Hidden"
    return dataset.name


def metric_split(metric: str) -> str | None:
    """The split a per-split aggregate ("split_III_f1") averages over; None for the others."""
    return next((split for split in SPLITS if metric.startswith(f"split_{split}_")), None)


def aggregate_is_one_sealed_dataset(metric: str, datasets: Iterable[Dataset]) -> bool:
    """A split's macro average over a single sealed dataset *is* that dataset's score,
    so it stays sealed with it (Split III with one hidden dataset, say)."""
    split = metric_split(metric)
    if split is None:
        return False
    in_split = [ds for ds in datasets if ds.split == split]
    return len(in_split) == 1 and in_split[0].is_sealed
