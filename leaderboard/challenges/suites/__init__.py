"""Metric suites: how a challenge's gold files are read and scored, and what ranks.

A suite validates gold files when organizers upload them (and produces the
answer-free inputs that participants' systems read, copied from an allowlist
by ``scoring.inputs``), checks the shape of prediction uploads, scores one
dataset, and aggregates per-dataset metrics into the columns that rank teams
(MRQA's macro-F1, per split; ROUGE-L for MRC2018; F1 for SQuAD 2.0, QuAC and
CoQA; HumSent for Deep Read).  Each suite is a thin adapter over the public
functions of its ``scoring`` module, which own the benchmark's file formats
and gold checks; the suites add the platform's metric names, caches and the
self-check.  Other parts of the platform use ``scoring`` directly too (the
starting kit, breakdowns, dialog runs, imports).

``base`` holds the protocol, its small types and options, and what every suite
shares; one module per benchmark holds its suite and its options; ``columns``
what boards show of them.  This module holds the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from leaderboard.challenges.suites.base import Suite
from leaderboard.challenges.suites.coqa import CoqaSuite
from leaderboard.challenges.suites.deepread import DeepReadSuite
from leaderboard.challenges.suites.mrc2018 import Mrc2018Suite
from leaderboard.challenges.suites.mrqa import MrqaSuite
from leaderboard.challenges.suites.quac import QuacSuite
from leaderboard.challenges.suites.squad2 import Squad2Suite

if TYPE_CHECKING:
    from leaderboard.challenges.models import Challenge

SUITES: dict[str, Suite] = {
    "mrqa": MrqaSuite(),
    "mrc2018": Mrc2018Suite(),
    "squad2": Squad2Suite(),
    "quac": QuacSuite(),
    "coqa": CoqaSuite(),
    "deepread": DeepReadSuite(),
}


def suite_for(challenge: Challenge) -> Suite:
    try:
        return SUITES[challenge.metric_suite]
    except KeyError:
        raise NotImplementedError(f"metric suite {challenge.metric_suite!r} is not available yet") from None
