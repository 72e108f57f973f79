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

import datetime as dt
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Func, IntegerField, OuterRef, QuerySet, Subquery

from leaderboard.challenges.models import DatasetFile
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.core.errors import ServiceError
from leaderboard.sandbox.answers_json import answer_refusal
from leaderboard.submissions.models import DialogAnswers, Submission
from leaderboard.submissions.scores import score_dataset
from leaderboard.submissions.selectors import submission_run_plan
from scoring.dialogs import DIALOG_FORMATS, QUESTION_FORMATS, Dialog, Mode, Revealed, dialogs_of_file, reveal
from scoring.errors import InputFormatError
from scoring.protocol import f1_by_turn, speed

_ACTS = {"yesno": frozenset({"y", "n", "x"}), "followup": frozenset({"y", "n", "m"})}


class TurnRefused(ServiceError):
    """A turn the protocol cannot take: out of order, of a mode, dataset or dialog the run has not."""


@lru_cache(maxsize=8)
def _gold_dialogs(fmt: str, sha256: str, path: str) -> list[Dialog]:
    # Keyed by the gold's sha256: a stored gold file is never changed (a new gold is a new file with
    # a new sha256), so each is parsed once per process whichever runs and turns ask for it.
    return dialogs_of_file(fmt, path, gold=True)


@dataclass(frozen=True)
class RunDialogs:
    fmt: str
    dialogs: list[Dialog]


@dataclass(frozen=True)
class _GoldFile:
    path: str
    sha256: str


# An attempt: its run, its number, and when its claim started it (ids of deleted runs can come back).
_AttemptKey = tuple[int, int, dt.datetime | None]


@lru_cache(maxsize=256)
def _run_gold_files(key: _AttemptKey) -> tuple[_GoldFile, ...]:
    """The gold file of each of a run's datasets, in the order of the attempt's plan.  Asked at every
    turn, so kept per attempt: a run's datasets are fixed when it is claimed, and a gold replaced
    while it runs sends it round again (``evaluation.submission_run_finish``) with a new attempt."""
    submission = Submission.objects.select_related("phase__challenge").get(pk=key[0])
    files = {f.dataset.slug: _GoldFile(f.gold.path, f.sha256) for f in DatasetFile.objects.filter(
        dataset__challenge=submission.phase.challenge, portion=submission.phase.portion).select_related("dataset")}
    return tuple(files[ds.slug] for ds in submission_run_plan(submission=submission).datasets)


def _attempt_key(submission: Submission) -> _AttemptKey:
    return submission.pk, submission.attempts, submission.started_at


def run_gold_dialogs(*, submission: Submission, dataset: int) -> RunDialogs:
    """The gold dialogs of the run's ``dataset``-th dataset, in the order of its inputs file."""
    fmt = submission.phase.challenge.metric_suite
    if fmt not in DIALOG_FORMATS | QUESTION_FORMATS:
        raise TurnRefused("this challenge's datasets are neither dialogs nor questions the protocol can ask")
    files = _run_gold_files(_attempt_key(submission))
    if not 0 <= dataset < len(files):
        raise TurnRefused(f"the run has {len(files)} dataset(s); there is no dataset {dataset}")
    try:
        dialogs = _gold_dialogs(fmt, files[dataset].sha256, files[dataset].path)
    except (OSError, InputFormatError):
        # The file kept for this attempt is gone (a retired gold pruned, say): look again, once.
        _run_gold_files.cache_clear()
        files = _run_gold_files(_attempt_key(submission))
        dialogs = _gold_dialogs(fmt, files[dataset].sha256, files[dataset].path)
    return RunDialogs(fmt, dialogs)


def _mode_of(submission: Submission, mode: str) -> Mode:
    if mode not in submission.phase.protocol_modes:
        raise TurnRefused(f"this run plays the modes {', '.join(submission.phase.protocol_modes) or 'none'}")
    return Mode(mode)


def _dialog_of(submission: Submission, dataset: int, dialog: int) -> Dialog:
    """Asked only for a run its caller may play (the internal API checked the worker and the run)."""
    dialogs = run_gold_dialogs(submission=submission, dataset=dataset).dialogs
    if not 0 <= dialog < len(dialogs):
        raise TurnRefused(f"dataset {dataset} has {len(dialogs)} dialogs; there is no dialog {dialog}")
    _attempt_remember(submission, dataset, dialogs)
    return dialogs[dialog]


def _answer_checked(answer: Any) -> dict[str, str]:
    if not isinstance(answer, dict) or not isinstance(answer.get("answer"), str):
        raise TurnRefused('an answer is {"answer": "...", "yesno": "y|n|x", "followup": "y|n|m"}')
    # The one rule for answers on every path (the compute worker applies it before it sends a turn,
    # so a system's answer the rule refuses ends its mode as the system's fault there, not here).
    problem = answer_refusal(answer["answer"])
    if problem is not None:
        raise TurnRefused(problem)
    taken = {"answer": answer["answer"]}
    for key, allowed in _ACTS.items():
        value = answer.get(key, "x" if key == "yesno" else "n")
        if value not in allowed:
            raise TurnRefused(f"{key!r} must be one of {', '.join(sorted(allowed))}")
        taken[key] = value
    return taken


def _latency(latency: Any) -> float | None:
    return round(float(latency), 3) if isinstance(latency, (int, float)) else None


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
    """Record the system's answer to ``turn`` (0-based) of a dialog, then reveal what the mode allows."""
    return dialog_turns_answer(submission=submission, mode=mode, dataset=dataset, dialog=dialog, first=turn,
                               answers=[answer], latencies_ms=[latency_ms])


def dialog_turns_answer(*, submission: Submission, mode: str, dataset: int, dialog: int, first: int,
                        answers: Sequence[Any], latencies_ms: Sequence[Any]) -> Revealed:
    """Record the answers to turns ``first``, ``first + 1``... of a dialog, then reveal what the mode
    allows once the last of them is answered.

    Turns are taken in order.  The same answer again (a worker retrying a call whose reply it
    lost) gets the same reply; another answer to a turn already answered is refused: the first
    one was on record before its gold was revealed.  Several turns in one call are for the modes
    that reveal nothing (own history, single question): a worker sends a dialog's answers at once.
    """
    played = _mode_of(submission, mode)
    gold = _dialog_of(submission, dataset, dialog)
    if not answers or len(latencies_ms) != len(answers):
        raise TurnRefused("expected one or more answers, each with its latency")
    taken = [_answer_checked(answer) for answer in answers]
    last = first + len(taken) - 1
    if first < 0 or last >= len(gold.turns):
        raise TurnRefused(f"dialog {dialog} has {len(gold.turns)} turns; there is no turn {last + 1 if first >= 0 else first + 1}")
    with transaction.atomic():
        row = _row(submission, played, dataset, dialog)
        if first > len(row.answers):
            raise TurnRefused(f"turn {first + 1} of dialog {dialog} before turn {len(row.answers) + 1}")
        for turn, (answer, latency) in enumerate(zip(taken, latencies_ms, strict=True), start=first):
            if turn < len(row.answers):
                if row.answers[turn] != answer:
                    raise TurnRefused(f"turn {turn + 1} of dialog {dialog} was answered already, differently")
                continue
            row.answers.append(answer)
            row.latencies_ms.append(_latency(latency))
        row.save(update_fields=["answers", "latencies_ms"])
    return reveal(played, gold, last + 1)


# --------------------------------------------------------------------------- the usual turn, at once

# A turn costs the trusted side what the system waits for, at every turn of the modes that reveal
# gold.  The checked path above reads the worker, the run and the dialog's row before it writes (a
# few milliseconds of queries); the usual call (the next turns of a dialog of an attempt this process
# has served already, from the run's own worker) needs none of those reads: one statement that
# writes only if the worker, the run and the row's length are as expected, then the commit, then the
# reply from the gold parsed once.  Anything else (a first call, a retry, a refusal, a lost race)
# finds nothing written and takes the checked path, which answers it as it always did.

@dataclass(frozen=True)
class _Attempt:
    """What the checked path learnt of an attempt: its claim's start (a deleted run's id can come
    back), its modes, and the gold dialogs of the datasets it played so far, by position."""

    started_at: dt.datetime | None
    modes: tuple[str, ...]
    dialogs: dict[int, list[Dialog]]
    # The run's query as each caller (by its token's sha256) may play it: built once, run every turn.
    runs: dict[str, QuerySet[Submission]] = field(default_factory=dict)
    # The usual turn's statement per caller, compiled once (``_append_statement``).
    appends: dict[str, tuple[str, tuple[Any, ...]]] = field(default_factory=dict)


_ATTEMPTS_KEPT = 32
_attempts: OrderedDict[tuple[int, int], _Attempt] = OrderedDict()
_attempts_lock = threading.Lock()


def _attempt_remember(submission: Submission, dataset: int, dialogs: list[Dialog]) -> None:
    key = (submission.pk, submission.attempts)
    with _attempts_lock:
        known = _attempts.get(key)
        if known is None or known.started_at != submission.started_at:
            known = _Attempt(submission.started_at, tuple(submission.phase.protocol_modes), {})
        known.dialogs[dataset] = dialogs
        _attempts[key] = known
        _attempts.move_to_end(key)
        while len(_attempts) > _ATTEMPTS_KEPT:
            _attempts.popitem(last=False)


def _attempt_known(submission_id: int, attempt: int) -> _Attempt | None:
    with _attempts_lock:
        return _attempts.get((submission_id, attempt))


def _run_as(known: _Attempt, run: Callable[[], QuerySet[Submission]], caller: str) -> QuerySet[Submission]:
    """The attempt's run as ``caller`` may play it, a query not yet run (building one costs more than
    running it)."""
    key = hashlib.sha256(caller.encode()).hexdigest()
    mine = known.runs.get(key)
    if mine is None:
        if len(known.runs) >= 4:  # a run has one worker; others' calls only fall through to a 404
            known.runs.clear()
            known.appends.clear()
        mine = known.runs[key] = run().filter(started_at=known.started_at)
    return mine


class _JsonLength(Func):
    """The length of a JSON array column."""

    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, function="json_array_length", **extra)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, function="jsonb_array_length", **extra)


_APPENDS_ON = frozenset({"sqlite", "postgresql"})  # the databases the platform runs on


def _append_statement(known: _Attempt, run: Callable[[], QuerySet[Submission]], caller: str, count: int
                      ) -> tuple[str, tuple[Any, ...]]:
    """The usual turn's UPDATE for ``count`` answers, and the parameters of its run check: the answers
    appended only where the record holds ``first`` of them and the run is the caller's (``_run_as``).  Compiled once per
    attempt, caller and count, because building it through the ORM each turn (the filter cloning the
    run's query, the update compiling it) cost more than running it; the parameters, in order, are the
    appended answers, then the latencies (``_appended_params``), then the dialog's key, its length,
    and the returned ones."""
    key = f"{hashlib.sha256(caller.encode()).hexdigest()}:{count}"
    found = known.appends.get(key)
    if found is not None:
        return found
    run_sql, run_params = _run_as(known, run, caller).values("pk").query.sql_with_params()
    meta = DialogAnswers._meta
    q = connection.ops.quote_name
    col = {f.name: q(f.column) for f in meta.concrete_fields if f.column}
    if connection.vendor == "sqlite":
        pairs = ", ".join(["'$[#]', json(%s)"] * count)  # each appended after the one before
        answers, latencies = (f"json_insert({col[c]}, {pairs})" for c in ("answers", "latencies_ms"))
        length = f"json_array_length({col['answers']})"
    else:
        answers, latencies = (f"({col[c]} || %s::jsonb)" for c in ("answers", "latencies_ms"))
        length = f"jsonb_array_length({col['answers']})"
    sql = (f"UPDATE {q(meta.db_table)} SET {col['answers']} = {answers}, {col['latencies_ms']} = {latencies}"
           f" WHERE {col['submission']} = %s AND {col['attempt']} = %s AND {col['mode']} = %s"
           f" AND {col['dataset']} = %s AND {col['dialog']} = %s AND {length} = %s"
           f" AND {col['submission']} IN ({run_sql})")
    found = known.appends[key] = (sql, tuple(run_params))
    return found


def _appended_params(items: Sequence[Any]) -> list[str]:
    """The parameters ``_append_statement`` appends ``items`` with: one JSON text each on SQLite, the
    whole list as one on PostgreSQL."""
    if connection.vendor == "sqlite":
        return [json.dumps(item) for item in items]
    return [json.dumps(list(items))]


def dialog_turns_append(*, run: Callable[[], QuerySet[Submission]], caller: str, submission_id: int, attempt: int, mode: str, dataset: int,
                        dialog: int, first: int, answers: Sequence[Any], latencies_ms: Sequence[Any]
                        ) -> Revealed | None:
    """``dialog_turns_answer`` for the usual call, in one statement: the answers to turns ``first``,
    ``first + 1``... of a dialog whose record holds ``first`` answers, of an attempt whose turns this
    process has taken before (``_dialog_of``).  ``run``: makes the run as ``caller`` (the worker's
    token) may play it, a query not yet run (``worker_api.run_of_token``), which the statement checks
    as it writes; made once per attempt and caller.

    The answers are committed before the reply is made.  None wherever anything else may be the case
    (the attempt or dataset not seen here yet, a turn out of order or answered already, an answer the
    rule refuses, another worker's token, another database): nothing is written, and the caller
    takes the checked path (``dialog_turns_answer``), which answers it.
    """
    known = _attempt_known(submission_id, attempt)
    if known is None or mode not in known.modes or connection.vendor not in _APPENDS_ON:
        return None
    dialogs = known.dialogs.get(dataset)
    if dialogs is None or not 0 <= dialog < len(dialogs) or not answers or len(latencies_ms) != len(answers):
        return None
    try:
        taken = [_answer_checked(answer) for answer in answers]
    except TurnRefused:
        return None  # refused on the checked path, once the worker and the run are checked
    last = first + len(taken) - 1
    if first < 0 or last >= len(dialogs[dialog].turns):
        return None
    latencies = [_latency(latency) for latency in latencies_ms]
    key = {"submission_id": submission_id, "attempt": attempt, "mode": mode, "dataset": dataset, "dialog": dialog}
    with transaction.atomic():
        if first == 0:
            if not _run_as(known, run, caller).exists():
                return None
            try:
                with transaction.atomic():
                    DialogAnswers.objects.create(**key, answers=taken, latencies_ms=latencies)
            except IntegrityError:
                return None  # answered before: a retry, the checked path's to compare
        else:
            sql, run_params = _append_statement(known, run, caller, len(taken))
            items = _appended_params(taken) + _appended_params(latencies)
            with connection.cursor() as cursor:
                cursor.execute(sql, (*items, submission_id, attempt, mode, dataset, dialog, first, *run_params))
                if cursor.rowcount != 1:
                    return None
    return reveal(Mode(mode), dialogs[dialog], last + 1)


def dialog_opened(*, run: Callable[[], QuerySet[Submission]], caller: str, submission_id: int, attempt: int, mode: str, dataset: int,
                  dialog: int) -> Revealed | None:
    """``dialog_open`` in one query, for a dialog of an attempt this process has served before; None
    where the attempt, its mode or dataset are not known here, or ``run`` finds no run (the caller
    then takes the checked path, which answers it)."""
    known = _attempt_known(submission_id, attempt)
    dialogs = known.dialogs.get(dataset) if known is not None and mode in known.modes else None
    if known is None or dialogs is None or not 0 <= dialog < len(dialogs):
        return None
    answered = DialogAnswers.objects.filter(submission_id=OuterRef("pk"), attempt=attempt, mode=mode, dataset=dataset,
                                            dialog=dialog).values_list(_JsonLength("answers"))[:1]
    found = list(_run_as(known, run, caller).values_list(Subquery(answered), flat=True)[:1])
    if not found:
        return None
    return reveal(Mode(mode), dialogs[dialog], found[0] or 0)


# --------------------------------------------------------------------------- scoring the record

def dialog_predictions(*, submission: Submission, dataset: int, mode: str) -> dict[str, Any]:
    """The run's recorded answers in ``mode`` on its ``dataset``-th dataset, as the suite's predictions
    ({gold qid: answer}); a turn never answered is absent (it scores 0, as the official scorers count it)."""
    gold = run_gold_dialogs(submission=submission, dataset=dataset)
    predictions: dict[str, Any] = {}
    rows = DialogAnswers.objects.filter(submission=submission, attempt=submission.attempts, mode=mode, dataset=dataset)
    for dialog, answers in rows.values_list("dialog", "answers"):
        for turn, answer in zip(gold.dialogs[dialog].turns, answers, strict=False):
            predictions[turn.qid] = answer if gold.fmt == "quac" else answer["answer"]
    return predictions


def turn_positions(*, submission: Submission, dataset: int) -> dict[str, int]:
    """Each question's position in its dialog (1 for a dialog's first), by gold qid."""
    return {turn.qid: k + 1 for dialog in run_gold_dialogs(submission=submission, dataset=dataset).dialogs
            for k, turn in enumerate(dialog.turns)}


def mode_metric(mode: str, metric: str) -> str:
    """A metric of one of the phase's other modes ("own_f1"); the first mode's are the plain ones."""
    return f"{mode}_{metric}"


DROP_METRIC = "gold_own_drop"  # F1 with gold history minus F1 with the system's own (the paper's w/ TF - w/o TF)


def dialog_run_predictions(*, submission: Submission, files: list[DatasetFile]) -> dict[DatasetFile, dict[str, dict[str, Any]]]:
    """Per dataset file (the run's datasets, in order), each mode's recorded predictions."""
    return {f: {mode: dialog_predictions(submission=submission, dataset=index, mode=mode)
                for mode in submission.phase.protocol_modes} for index, f in enumerate(files)}


def dialog_run_result(*, submission: Submission, index: int, dataset_file: DatasetFile,
                      by_mode: dict[str, dict[str, Any]], peak_memory_mib: int | None = None) -> DatasetResult:
    """The run's ``index``-th dataset scored in every mode by the suite's own scorer (the official
    script's figures), from each mode's recorded predictions (``dialog_run_predictions``).

    The first mode's metrics are stored as they are (they rank, and the board's usual columns show
    them) with its F1 by turn position; each other mode's F1 as ``<mode>_f1``; the drop from gold to
    own history where both ran; and the system's speed in the first mode, from the latencies measured
    per request (``latency_p50_ms``, ``latency_p95_ms``, ``questions_per_s``), with the run's peak
    memory over all its modes (``peak_memory_mib``, whole MiB as the run's page shows it; stored with
    each dataset, so that the board's average of it is the figure itself).
    """
    modes = submission.phase.protocol_modes
    fmt = submission.phase.challenge.metric_suite
    scored = {mode: score_dataset(submission=submission, dataset_file=dataset_file, predictions=by_mode[mode])
              for mode in modes}
    main = scored[modes[0]]
    metrics = dict(main.metrics)
    if fmt in DIALOG_FORMATS:  # an MRQA question is a dialog of one turn: nothing to break down
        metrics.update(f1_by_turn(fmt, main.per_example, turn_positions(submission=submission, dataset=index)))
    # The first mode's F1 is ``f1`` itself: stored once, under one name, so that the rule that
    # withholds averages giving a sealed score away (per metric family) sees it as one family.
    for mode in modes[1:]:
        metrics[mode_metric(mode, "f1")] = scored[mode].metrics.get("f1")
    gold_f1, own_f1 = (scored[m].metrics.get("f1") if m in scored else None for m in ("gold", "own"))
    if gold_f1 is not None and own_f1 is not None:
        metrics[DROP_METRIC] = gold_f1 - own_f1
    metrics.update(_speed(submission, index, modes[0]))
    if peak_memory_mib is not None:
        metrics["peak_memory_mib"] = float(peak_memory_mib)
    return DatasetResult(metrics=metrics, per_example=main.per_example)


def _speed(submission: Submission, dataset: int, mode: str) -> dict[str, float | None]:
    rows = DialogAnswers.objects.filter(submission=submission, attempt=submission.attempts, mode=mode, dataset=dataset)
    latencies: list[float] = sorted(ms for row in rows.values_list("latencies_ms", flat=True) for ms in row if ms is not None)
    return speed(latencies)
