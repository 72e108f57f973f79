"""The trusted side of the interactive protocol (Siblini et al.; ``scoring.dialogs``).

A compute worker holds a run's answer-free inputs only.  It plays each dialog with the system turn
by turn and posts every answer here as it comes; the reply reveals what the phase's mode allows of
the gold (``scoring.dialogs.reveal``): that turn's gold answer in the gold and adversarial modes,
and the next turn's in the adversarial mode.  Answers are stored before anything is revealed and
in order, so a worker (and the system behind it) learns a turn's gold only after its answer is on
record here, and that record is what the run is scored from (``dialog_predictions``).

Positions name everything (the run's datasets, the dialogs of an inputs file, the turns of a
dialog): a sealed dataset's dialogs carry re-keyed ids in the inputs, and a worker needs none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.db import IntegrityError, transaction

from leaderboard.challenges.models import DatasetFile
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.models import DialogAnswers, Submission
from leaderboard.submissions.selectors import system_run_plan
from scoring.dialogs import DIALOG_FORMATS, Dialog, Mode, Revealed, protocol_dialogs, reveal
from scoring.io import load_json

# An answer is a span or a short free-form text; a longer one is refused, not cut (it would be
# scored as something the system did not say).
ANSWER_MAX_CHARS = 4000
_ACTS = {"yesno": frozenset({"y", "n", "x"}), "followup": frozenset({"y", "n", "m"})}


class TurnRefused(ServiceError):
    """A turn the protocol cannot take: out of order, of a mode, dataset or dialog the run has not."""


@lru_cache(maxsize=16)
def _gold_dialogs(fmt: str, path: str, mtime: float) -> list[Dialog]:
    # Keyed by the file's mtime: a replaced gold file is read again.
    return protocol_dialogs(fmt, load_json(path), path=path)


@dataclass(frozen=True)
class RunDialogs:
    fmt: str
    dialogs: list[Dialog]


def run_gold_dialogs(*, submission: Submission, dataset: int) -> RunDialogs:
    """The gold dialogs of the run's ``dataset``-th dataset, in the order of its inputs file."""
    challenge = submission.phase.challenge
    fmt = challenge.metric_suite
    if fmt not in DIALOG_FORMATS:
        raise TurnRefused("this challenge's datasets are not dialogs")
    datasets = system_run_plan(submission=submission).datasets
    if not 0 <= dataset < len(datasets):
        raise TurnRefused(f"the run has {len(datasets)} dataset(s); there is no dataset {dataset}")
    gold = DatasetFile.objects.get(dataset__challenge=challenge, dataset__slug=datasets[dataset].slug,
                                   portion=submission.phase.portion).gold.path
    return RunDialogs(fmt, _gold_dialogs(fmt, gold, os.path.getmtime(gold)))


def _mode_of(submission: Submission, mode: str) -> Mode:
    if mode not in submission.phase.protocol_modes:
        raise TurnRefused(f"this run plays the modes {', '.join(submission.phase.protocol_modes) or 'none'}")
    return Mode(mode)


def _dialog_of(submission: Submission, dataset: int, dialog: int) -> Dialog:
    dialogs = run_gold_dialogs(submission=submission, dataset=dataset).dialogs
    if not 0 <= dialog < len(dialogs):
        raise TurnRefused(f"dataset {dataset} has {len(dialogs)} dialogs; there is no dialog {dialog}")
    return dialogs[dialog]


def _answer_checked(answer: Any) -> dict[str, str]:
    if not isinstance(answer, dict) or not isinstance(answer.get("answer"), str):
        raise TurnRefused('an answer is {"answer": "...", "yesno": "y|n|x", "followup": "y|n|m"}')
    if len(answer["answer"]) > ANSWER_MAX_CHARS:
        raise TurnRefused(f"an answer is at most {ANSWER_MAX_CHARS} characters")
    taken = {"answer": answer["answer"]}
    for key, allowed in _ACTS.items():
        value = answer.get(key, "x" if key == "yesno" else "n")
        if value not in allowed:
            raise TurnRefused(f"{key!r} must be one of {', '.join(sorted(allowed))}")
        taken[key] = value
    return taken


def _row(submission: Submission, mode: Mode, dataset: int, dialog: int) -> DialogAnswers:
    """The dialog's record, locked for this transaction (made if it is the dialog's first turn)."""
    key = {"submission": submission, "attempt": submission.attempts, "mode": mode.value, "dataset": dataset,
           "dialog": dialog}
    row = DialogAnswers.objects.select_for_update().filter(**key).first()
    if row is None:
        try:
            with transaction.atomic():
                DialogAnswers.objects.create(**key)
        except IntegrityError:
            pass  # made meanwhile by a retry of the same call: locked below like any other
        row = DialogAnswers.objects.select_for_update().get(**key)
    return row


def dialog_open(*, submission: Submission, mode: str, dataset: int, dialog: int) -> Revealed:
    """What a dialog's next request may show before it is answered (the current turn's gold answer,
    in the adversarial mode only): asked before the dialog's first request."""
    played = _mode_of(submission, mode)
    gold = _dialog_of(submission, dataset, dialog)
    answered = DialogAnswers.objects.filter(submission=submission, attempt=submission.attempts, mode=played.value,
                                            dataset=dataset, dialog=dialog).values_list("answers", flat=True).first()
    return reveal(played, gold, len(answered or []))


def dialog_turn_answer(*, submission: Submission, mode: str, dataset: int, dialog: int, turn: int,
                       answer: Any, latency_ms: float | None = None) -> Revealed:
    """Record the system's answer to ``turn`` (0-based) of a dialog, then reveal what the mode allows.

    Turns are taken in order.  The same answer again (a worker retrying a call whose reply it
    lost) gets the same reply; another answer to a turn already answered is refused: the first
    one was on record before its gold was revealed.
    """
    played = _mode_of(submission, mode)
    gold = _dialog_of(submission, dataset, dialog)
    taken = _answer_checked(answer)
    if not 0 <= turn < len(gold.turns):
        raise TurnRefused(f"dialog {dialog} has {len(gold.turns)} turns; there is no turn {turn + 1}")
    with transaction.atomic():
        row = _row(submission, played, dataset, dialog)
        if turn < len(row.answers):
            if row.answers[turn] != taken:
                raise TurnRefused(f"turn {turn + 1} of dialog {dialog} was answered already, differently")
        elif turn > len(row.answers):
            raise TurnRefused(f"turn {turn + 1} of dialog {dialog} before turn {len(row.answers) + 1}")
        else:
            row.answers.append(taken)
            row.latencies_ms.append(round(float(latency_ms), 3) if isinstance(latency_ms, (int, float)) else None)
            row.save(update_fields=["answers", "latencies_ms"])
    return reveal(played, gold, turn + 1)
