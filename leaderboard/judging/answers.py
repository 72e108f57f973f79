"""What a submission answered, read from what it stored: the upload of a prediction file, the answers a
system run kept when it was scored (``submissions.storage.run_answers_read``), as a rescore reads them.

Only reads: nothing is scored here, and a submission whose answers are not stored (an imported row,
a run scored before answers were kept) is refused by name, so a round never judges an answer it
made up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from leaderboard.challenges.models import SYSTEM_KINDS, DatasetFile, Split, SubmissionKind
from leaderboard.challenges.selectors import dataset_upload_names
from leaderboard.core.errors import ServiceError
from leaderboard.sandbox.answers_json import JsonRejected, answers_decode
from leaderboard.submissions.models import Submission
from leaderboard.submissions.storage import run_answers_name, run_answers_read
from leaderboard.submissions.uploads import DatasetTarget, UploadError, parse_upload


@dataclass(frozen=True)
class Answer:
    """One system's answer to one question, as a judge reads it: the text, and a yes/no opinion."""

    text: str
    yesno: str = ""


def answer_of(raw: Any, *, suite_key: str) -> Answer:
    """The judged form of a stored answer (None: no answer, judged as the empty answer).

    MRC2018 scores the first of an object's ``answers`` and the first ``yesno_answers`` label
    (``scoring.mrc2018.evaluate_mrc2018``), so that is what the judge reads.
    """
    if raw is None:
        return Answer("")
    if isinstance(raw, str):
        return Answer(raw)
    if suite_key == "mrc2018" and isinstance(raw, dict):
        answers = raw.get("answers") or []
        labels = raw.get("yesno_answers") or []
        text = answers[0] if answers and isinstance(answers[0], str) else ""
        label = labels[0] if labels and isinstance(labels[0], str) else ""
        return Answer(text, label)
    # The suites judged here store strings only (their check_predictions refuses anything else).
    return Answer(str(raw))


def submission_answers_read(*, submission: Submission, files: Sequence[DatasetFile]) -> dict[str, dict[str, Any]]:
    """``{dataset slug: {qid: answer}}`` for those of ``files`` the submission answers (a prediction
    file never answers Split III: teams never see its questions)."""
    where = f"submission {submission.pk}"
    if submission.kind in SYSTEM_KINDS:
        stored = run_answers_read(submission_id=submission.pk)
        if stored is None:
            raise ServiceError(f"{where}: its run kept no answers to judge")
        out: dict[str, dict[str, Any]] = {}
        for f in files:
            if f.dataset.slug in stored:
                name = f"{run_answers_name(submission.pk)}:{f.dataset.slug}.json"
                try:
                    out[f.dataset.slug] = answers_decode(stored[f.dataset.slug], where=name, qids=f.qids).by_qid
                except JsonRejected as exc:
                    raise ServiceError(f"{where}: {exc.message}") from None
        return out
    if submission.kind != SubmissionKind.PREDICTIONS or not submission.file:
        raise ServiceError(f"{where}: an imported result has no answers to judge")
    targets = [DatasetTarget(f.dataset.slug, dataset_upload_names(f.dataset), f.qids)
               for f in files if f.dataset.split != Split.III]
    with submission.file.open("rb") as fh:
        raw = fh.read()
    try:
        parsed = parse_upload(raw, filename=submission.original_name or "predictions", targets=targets,
                              max_expanded_bytes=settings.MAX_PREDICTION_ARCHIVE_BYTES, require_all=False)
    except UploadError as exc:
        raise ServiceError(f"{where}: its upload cannot be read against the current questions: {exc.message}") from None
    return {slug: answers.by_qid for slug, answers in parsed.items()}
