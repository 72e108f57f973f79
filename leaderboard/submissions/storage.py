"""Where the bytes are: teams' uploads against their budget, the organizers' report, and retention.

Private storage (``PRIVATE_STORAGE_ROOT``) holds

- teams' uploads under ``submissions/``: prediction files, image archives, code bundles; the
  only files that grow with participation, so each team has a budget per challenge
  (``systems: {storage_mb_per_team: N}`` in the spec, ``DEFAULT_STORAGE_MB_PER_TEAM`` otherwise),
  checked before an upload is stored;
- the organizers' data (``gold/``, ``inputs/``; a replaced gold file stays while a score refers
  to it, ``RetiredGold``), the starting kits (``kits/<challenge>/``) and uploads being received
  (``spool/``);
- the answers each system run was scored with (``outputs/<submission id>.zip``), so that a gold
  change can rescore the run without running it again.

The engine holds each run's image under a reference of its own
(``RUN_IMAGE_REPOSITORY/<submission>:<attempt>``), removed after the run by the worker
(``workers/control_runs.py``); ``run_images_in_use`` says which references a run still needs.

``storage_report`` accounts for every byte under private storage; ``storage_retention_plan``
says which uploads of finished submissions nobody needs any more, and ``storage_retain`` frees
exactly those.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import json
import logging
import os
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import SYSTEM_KINDS, Challenge, DatasetFile, RetiredGold, SubmissionKind
from leaderboard.challenges.selectors import storage_budget_bytes
from leaderboard.core.display import size_text
from leaderboard.core.errors import PayloadTooLarge
from leaderboard.sandbox.archives import RunImage, run_images_list
from leaderboard.submissions.models import FINAL_STATUSES, BoardEntry, ScoreHistory, Status, Submission

logger = logging.getLogger(__name__)

# A file under submissions/ or spool/ that no row names may be an upload whose transaction has
# not committed yet: retention leaves such files alone for at least this long.
ORPHAN_GRACE = dt.timedelta(days=1)


# --------------------------------------------------------------------------- the budget


@dataclass(frozen=True)
class StorageUsage:
    """What a team's stored uploads take in a challenge, and its budget there."""

    used_bytes: int
    budget_bytes: int

    @property
    def used_text(self) -> str:
        return size_text(self.used_bytes)

    @property
    def budget_text(self) -> str:
        return size_text(self.budget_bytes)

    def refusal(self, *, incoming_bytes: int, team: str) -> str | None:
        if self.used_bytes + incoming_bytes <= self.budget_bytes:
            return None
        return (
            f"storage budget: team {team}'s stored uploads take {size_text(self.used_bytes)} of its "
            f"{size_text(self.budget_bytes)} in this challenge, and this upload ({size_text(incoming_bytes)}) "
            "would exceed it. The organizers free the files of older submissions (each team's board "
            "submission and newest ones are kept); ask them, or upload a smaller file"
        )


def team_storage_usage(*, team: Team) -> StorageUsage:
    """Bytes of the team's uploads still stored (a file freed by retention no longer counts)."""
    # A campaign's run names its source's file: the bytes are counted once, on the source.
    used = (Submission.objects.filter(team=team, campaign_source__isnull=True).exclude(file="")
            .aggregate(total=Sum("size_bytes"))["total"])
    return StorageUsage(used_bytes=used or 0, budget_bytes=storage_budget_bytes(challenge=team.challenge))


def storage_budget_enforce(*, team: Team, incoming_bytes: int) -> None:
    """Refuse (413) an upload that would take the team past its budget.

    Called once before an upload is spooled (nothing is written for a refused one) and again
    inside the transaction that stores it, after ``quota_enforce_locked`` locked the team's
    row, so that two uploads of one team cannot both take the same room.
    """
    refusal = team_storage_usage(team=team).refusal(incoming_bytes=incoming_bytes, team=team.name)
    if refusal:
        raise PayloadTooLarge(refusal)


# --------------------------------------------------------------------------- run images


@dataclass(frozen=True)
class RunImagesInUse:
    """What run references are still needed: the running attempts, and the images that queued or
    running submissions were pinned to at upload (keeping one loaded spares loading it again)."""

    running: frozenset[tuple[int, int]]
    image_ids: frozenset[str]

    def needs(self, image: RunImage) -> bool:
        return (image.submission_id, image.attempt) in self.running or image.image_id in self.image_ids


def run_images_in_use(*, finished: tuple[int, int] | None = None) -> RunImagesInUse:
    """Read after the engine was listed: a reference made after the listing belongs to a run
    claimed before this read, so it is either seen here as running or not seen at all.

    ``finished``: (submission, attempt) of a run that just ended, whose row may still say running.
    """
    running = set(
        Submission.objects.filter(status=Status.RUNNING, kind__in=SYSTEM_KINDS).values_list("pk", "attempts")
    )
    pinned = Submission.objects.filter(
        status__in=(Status.QUEUED, Status.RUNNING), kind=SubmissionKind.DOCKER_IMAGE
    ).exclude(image_digest="")
    if finished is not None:
        running.discard(finished)
        pinned = pinned.exclude(pk=finished[0])
    return RunImagesInUse(frozenset(running), frozenset(pinned.values_list("image_digest", flat=True)))


def engine_run_images() -> tuple[list[RunImage], str]:
    """The engine's run references, or none and why they could not be read.

    For the organizers' commands, which run where the workers' engine is; the web app never
    asks the engine anything.
    """
    try:
        import docker  # noqa: PLC0415 - only organizers' commands on a worker host ask the engine; the web app never imports the SDK

        client = docker.from_env(timeout=30)
        try:
            return run_images_list(client, settings.RUN_IMAGE_REPOSITORY), ""
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine to ask here"
        return [], f"the container engine could not be asked ({exc})"


# --------------------------------------------------------------------------- the report


@dataclass
class StorageLine:
    """Files of one owner and kind: a team's prediction files, the organizers' gold, a kit..."""

    challenge: str  # slug; "" for the platform's own files
    owner: str  # a team's name, "organizers" or "platform"
    kind: str
    files: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class TeamStorage:
    challenge: str
    team: str
    used_bytes: int  # on disk
    budget_bytes: int


@dataclass(frozen=True)
class ImageLine:
    image: RunImage
    team: str
    status: str  # the submission's, or "gone"
    needed: bool  # by a running attempt or a queued/running submission of the same image


@dataclass
class StorageReport:
    lines: list[StorageLine]
    teams: list[TeamStorage]
    # Rows that name a file the disk does not have (pk, name): a bug or a hand-deleted file.
    missing: list[tuple[int, str]]
    images: list[ImageLine]
    engine_error: str = ""

    @property
    def total_bytes(self) -> int:
        return sum(line.bytes for line in self.lines)


@dataclass(frozen=True)
class _Owner:
    challenge: str
    owner: str
    kind: str
    submission: int | None = None


def _stored_files(root: Path) -> dict[str, os.stat_result]:
    """Every file under private storage by its storage name (posix, relative to the root)."""
    found = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            try:
                found[path.relative_to(root).as_posix()] = path.lstat()
            except OSError:
                continue  # removed while we walked
    return found


def _owners() -> dict[str, _Owner]:
    """Who each named file belongs to, from the database."""
    owners: dict[str, _Owner] = {}
    for pk, name, slug, team, kind in Submission.objects.exclude(file="").values_list(
        "pk", "file", "phase__challenge__slug", "team__name", "kind"
    ):
        owners[name] = _Owner(slug, team, kind, pk)
    for gold, inputs, slug in DatasetFile.objects.values_list("gold", "inputs", "dataset__challenge__slug"):
        if gold:
            owners[gold] = _Owner(slug, "organizers", "gold and training data")
        if inputs:
            owners[inputs] = _Owner(slug, "organizers", "answer-free inputs")
    for gold, slug in RetiredGold.objects.values_list("gold", "dataset__challenge__slug"):
        owners[gold] = _Owner(slug, "organizers", "replaced gold (scores still refer to it)")
    for pk, slug, team in Submission.objects.filter(kind__in=SYSTEM_KINDS).values_list(
        "pk", "phase__challenge__slug", "team__name"
    ):
        # The platform's copy, not the team's upload: outside the team's budget.
        owners[run_answers_name(pk)] = _Owner(slug, team, "system outputs (kept for rescoring)")
    for hid, pk, slug, team in ScoreHistory.objects.filter(submission__kind__in=SYSTEM_KINDS).values_list(
        "pk", "submission_id", "submission__phase__challenge__slug", "submission__team__name"
    ):
        owners[run_answers_history_name(hid)] = _Owner(slug, team, "outputs of an earlier run (determinism)", pk)
    return owners


def _owner_of(name: str, owners: dict[str, _Owner]) -> _Owner:
    if name in owners:
        return owners[name]
    top, _, rest = name.partition("/")
    if top == "kits" and "/" in rest:
        return _Owner(rest.split("/", 1)[0], "platform", "starting kit")
    if top == "spool":
        return _Owner("", "platform", "uploads being received")
    if top == "submissions":
        return _Owner("", "platform", "unreferenced upload")
    if top == RUN_ANSWERS_DIR:
        return _Owner("", "platform", "outputs of deleted submissions")
    return _Owner("", "platform", "other")


def storage_report(*, challenge: Challenge | None = None, images: Sequence[RunImage] | None = None,
                   engine_error: str = "") -> StorageReport:
    """Every byte under private storage, by challenge, owner and kind (only the challenge's own
    files when one is given), the teams against their budgets, and the engine's run images.

    ``images``: what ``engine_run_images`` read (listed before this reads the database).
    """
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    files = _stored_files(root)
    owners = _owners()
    lines: dict[tuple[str, str, str], StorageLine] = {}
    per_team: dict[tuple[str, str], int] = {}
    for name, stat in sorted(files.items()):
        owner = _owner_of(name, owners)
        if challenge is not None and owner.challenge != challenge.slug:
            continue
        line = lines.setdefault((owner.challenge, owner.owner, owner.kind),
                                StorageLine(owner.challenge, owner.owner, owner.kind))
        line.files += 1
        line.bytes += stat.st_size
        if owner.submission is not None:
            per_team[(owner.challenge, owner.owner)] = per_team.get((owner.challenge, owner.owner), 0) + stat.st_size
    missing = sorted((o.submission, name) for name, o in owners.items()
                     if o.submission is not None and name not in files
                     and (challenge is None or o.challenge == challenge.slug))
    teams = Team.objects.select_related("challenge").order_by("challenge__slug", "name")
    if challenge is not None:
        teams = teams.filter(challenge=challenge)
    team_rows = [
        TeamStorage(t.challenge.slug, t.name, per_team.get((t.challenge.slug, t.name), 0),
                    storage_budget_bytes(challenge=t.challenge))
        for t in teams
        if (t.challenge.slug, t.name) in per_team
    ]
    return StorageReport(
        lines=sorted(lines.values(), key=lambda x: (x.challenge == "", x.challenge, x.owner, x.kind)),
        teams=team_rows,
        missing=[(pk, name) for pk, name in missing if pk is not None],
        images=_image_lines(images or [], challenge=challenge),
        engine_error=engine_error,
    )


def _image_lines(images: Sequence[RunImage], *, challenge: Challenge | None) -> list[ImageLine]:
    in_use = run_images_in_use()
    rows = {
        pk: (slug, team, status)
        for pk, slug, team, status in Submission.objects.filter(pk__in={i.submission_id for i in images})
        .values_list("pk", "phase__challenge__slug", "team__name", "status")
    }
    lines = []
    for image in images:
        slug, team, status = rows.get(image.submission_id, ("", "", "gone"))
        if challenge is not None and slug != challenge.slug:
            continue
        lines.append(ImageLine(image, team, status, in_use.needs(image)))
    return lines


# --------------------------------------------------------------------------- retention


@dataclass(frozen=True)
class RetentionItem:
    """A file retention frees: a submission's upload, or a file nothing names."""

    name: str  # storage name
    size_bytes: int
    submission: int | None
    why: str


@dataclass
class RetentionPlan:
    older_than_days: int
    keep_newest: int
    now: dt.datetime
    free: list[RetentionItem] = field(default_factory=list)
    # submissions whose files are kept, by the first rule that keeps them
    kept: dict[str, int] = field(default_factory=dict)

    @property
    def free_bytes(self) -> int:
        return sum(item.size_bytes for item in self.free)


KEEP_ACTIVE = "queued, running or being scored (the run needs its file)"
KEEP_BOARD = "the team's board submission, or the one it selected"
KEEP_NEWEST = "among the team's newest in its phase"
KEEP_RECENT = "newer than the cut-off"
KEEP_SHARED = "named by a kept submission too (an evaluation campaign's run shares its source's upload)"


def storage_retention_plan(
    *, older_than_days: int, keep_newest: int, challenge: Challenge | None = None, now: dt.datetime | None = None
) -> RetentionPlan:
    """Which stored files retention would free, and why each other upload is kept.

    Kept: the file of every submission not yet final (a queued or running one needs it), each
    team's board submission and selected one, its ``keep_newest`` newest submissions per phase,
    and anything newer than ``older_than_days``.  Freed: the other submissions' uploads, and
    files under submissions/ or spool/ that no row names, once older than the cut-off and
    ``ORPHAN_GRACE`` (an upload being stored has a file before its row commits).
    """
    now = now or timezone.now()
    cutoff = now - dt.timedelta(days=older_than_days)
    plan = RetentionPlan(older_than_days=older_than_days, keep_newest=keep_newest, now=now)
    with_files = Submission.objects.exclude(file="").select_related("team", "phase")
    if challenge is not None:
        with_files = with_files.filter(phase__challenge=challenge)
    on_board = set(BoardEntry.objects.values_list("submission_id", flat=True))
    newest: dict[tuple[int, int], int] = {}
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    freeable: list[RetentionItem] = []
    kept_names: set[str] = set()
    for submission in with_files.order_by("-created_at", "-id"):
        rank = newest[(submission.team_id, submission.phase_id)] = newest.get(
            (submission.team_id, submission.phase_id), 0) + 1
        if submission.status not in FINAL_STATUSES:
            reason = KEEP_ACTIVE
        elif submission.pk in on_board or submission.is_selected:
            reason = KEEP_BOARD
        elif rank <= keep_newest:
            reason = KEEP_NEWEST
        elif submission.created_at >= cutoff:
            reason = KEEP_RECENT
        else:
            name = str(submission.file.name)
            try:
                size = (root / name).stat().st_size
            except OSError:
                size = 0  # already gone from disk: the row is cleared, nothing is freed
            freeable.append(RetentionItem(
                name, size, submission.pk,
                f"submission {submission.pk} ({submission.team.name}, {submission.phase.slug}, {submission.status}, "
                f"{submission.created_at:%Y-%m-%d})",
            ))
            continue
        kept_names.add(str(submission.file.name))
        plan.kept[reason] = plan.kept.get(reason, 0) + 1
    # One stored file may be two submissions' (a campaign's run and its source): kept if either is.
    for item in freeable:
        if item.name in kept_names:
            plan.kept[KEEP_SHARED] = plan.kept.get(KEEP_SHARED, 0) + 1
        else:
            plan.free.append(item)
    if challenge is None:
        plan.free += _orphans(root, before=min(cutoff, now - ORPHAN_GRACE).timestamp())
    return plan


def _orphans(root: Path, *, before: float) -> list[RetentionItem]:
    named = set(Submission.objects.exclude(file="").values_list("file", flat=True))
    items = []
    for name, stat in sorted(_stored_files(root).items()):
        top = name.partition("/")[0]
        if top not in ("submissions", "spool") or name in named or stat.st_mtime >= before:
            continue
        what = "an upload never received whole" if top == "spool" else "an upload no submission names"
        items.append(RetentionItem(name, stat.st_size, None, what))
    return items


@dataclass
class RetentionResult:
    freed: list[RetentionItem] = field(default_factory=list)
    # Planned but kept after all: the submission changed meanwhile (selected, re-queued...).
    skipped: list[RetentionItem] = field(default_factory=list)

    @property
    def freed_bytes(self) -> int:
        return sum(item.size_bytes for item in self.freed)


def storage_retain(*, plan: RetentionPlan) -> RetentionResult:
    """Free what ``plan`` lists: the row's file is cleared (with a note saying when and why) in
    the same transaction that checks it may still go, and the file deleted after the commit.

    A submission that became active again, or the team's board or selected submission, since
    the plan was made is skipped, never freed.
    """
    result = RetentionResult()
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    planned: dict[str, set[int]] = {}
    for item in plan.free:
        if item.submission is not None:
            planned.setdefault(item.name, set()).add(item.submission)
    for item in plan.free:
        if item.submission is None:
            _delete_file(root, item.name)
            result.freed.append(item)
            continue
        with transaction.atomic():
            submission = (
                Submission.objects.select_for_update()
                .filter(pk=item.submission, file=item.name, status__in=FINAL_STATUSES, is_selected=False)
                .exclude(pk__in=BoardEntry.objects.values("submission_id"))
                .first()
            )
            # A campaign started since the plan may run this file again under another row.
            shared = Submission.objects.filter(file=item.name).exclude(pk__in=planned[item.name]).exists()
            if submission is None or shared:
                result.skipped.append(item)
                continue
            note = {
                "at": None,
                "when": plan.now.isoformat(),
                "kind": "file_freed",
                "text": (f"the uploaded file ({size_text(item.size_bytes)}) was deleted by the organizers' storage "
                         f"retention on {plan.now:%Y-%m-%d}: older than {plan.older_than_days} days, and neither the "
                         f"team's board submission nor one of its {plan.keep_newest} newest in the phase; "
                         "it can no longer be downloaded or run again"),
            }
            Submission.objects.filter(pk=submission.pk).update(file="", log_notes=[*submission.log_notes, note])
            transaction.on_commit(functools.partial(_delete_file, root, item.name))
        result.freed.append(item)
    logger.info("storage retention: freed %s files, %s bytes; skipped %s", len(result.freed), result.freed_bytes,
                len(result.skipped))
    return result


def _delete_file(root: Path, name: str) -> None:
    try:
        default_storage.delete(name)
    except OSError as exc:
        logger.warning("storage retention: %s not deleted: %s", root / name, exc)


def submission_file_freed_note(*, submission: Submission) -> str:
    """What happened to a submission's upload, if retention deleted it ("" otherwise)."""
    notes: Iterable[object] = submission.log_notes or []
    for note in notes:
        if isinstance(note, dict) and note.get("kind") == "file_freed":
            return str(note.get("text", ""))
    return ""


# --------------------------------------------------------------------------- answers kept for rescoring

RUN_ANSWERS_DIR = "outputs"


def run_answers_name(submission_id: int) -> str:
    """Where a system run's answers are kept: derived from the id, so no column names it."""
    return f"{RUN_ANSWERS_DIR}/{submission_id}.zip"


def run_answers_store(*, submission_id: int, answers: Mapping[str, Mapping[str, object]]) -> str:
    """Keep the answers a run is about to be scored with: ``{dataset slug: {qid: answer}}``.

    Stored as checked and under the dataset's own question ids (a sealed dataset's re-keyed
    ids mapped back), not as the bytes the system wrote: the ids a system reads depend on
    the seal, which a reveal lifts, and a rescore must not depend on that.  One ``<slug>.json``
    per dataset in a zip; a run scored again (re-queued while scoring) replaces its file.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for slug, by_qid in answers.items():
            archive.writestr(f"{slug}.json", json.dumps(by_qid, ensure_ascii=False))
    name = run_answers_name(submission_id)
    # The storage would otherwise save beside an earlier file under a new name, which nothing derives.
    default_storage.delete(name)
    saved = default_storage.save(name, ContentFile(buffer.getvalue()))
    if saved != name:
        raise RuntimeError(f"{name} was stored as {saved}")
    return saved


def run_answers_read(*, submission_id: int) -> dict[str, bytes] | None:
    """``{dataset slug: the JSON of its answers}`` as ``run_answers_store`` kept them; None if it kept none."""
    name = run_answers_name(submission_id)
    if not default_storage.exists(name):
        return None
    with default_storage.open(name, "rb") as fh:
        data = fh.read()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {member.rsplit(".", 1)[0]: archive.read(member) for member in archive.namelist()}


def run_answers_history_name(history_id: int) -> str:
    """Where a re-run keeps the answers of the run it replaced (``ScoreHistory`` ``history_id``)."""
    return f"{RUN_ANSWERS_DIR}/history/{history_id}.zip"


def run_answers_keep(*, submission_id: int, history_id: int) -> bool:
    """Copy the run's kept answers beside its history entry, before a re-run replaces them: what a
    determinism check compares the new run's answers with.  False if the run kept none."""
    name = run_answers_name(submission_id)
    if not default_storage.exists(name):
        return False
    with default_storage.open(name, "rb") as fh:
        data = fh.read()
    kept = run_answers_history_name(history_id)
    default_storage.delete(kept)
    default_storage.save(kept, ContentFile(data))
    return True


def run_answers_read_kept(*, history_id: int) -> dict[str, bytes] | None:
    """The answers ``run_answers_keep`` kept for a history entry, as ``run_answers_read`` reads them."""
    name = run_answers_history_name(history_id)
    if not default_storage.exists(name):
        return None
    with default_storage.open(name, "rb") as fh, zipfile.ZipFile(io.BytesIO(fh.read())) as archive:
        return {member.rsplit(".", 1)[0]: archive.read(member) for member in archive.namelist()}
