"""What a challenge's Data page offers, who may download it and when; download counts.

The rules, written once here for the page, the API and the file views:

* **training files** (portion ``train``, Split I only): once the challenge's first phase opens;
* **dev portions of Split I and II datasets, with answers** (public by definition): once a phase
  that scores the dev portion opens;
* **answer-free inputs of a hidden test portion** (``DatasetFile.inputs``, the very file a system
  run reads) for a phase that takes prediction files on it, for exactly the datasets that phase
  scores (``phase_prediction_targets``): once that phase opens;
* **the starting kit** (``challenges/starting_kit.py``): when the dev data opens;
* **never**: test gold, or anything of a Split III dataset.  A sealed one is listed under its
  alias only, as "runs on systems only", with no size, hash or question count that could
  identify it.

Members of a team registered in the challenge may download; its organizers always.  Everyone
else sees what exists (names, sizes, hashes) and gets a 404 for any file URL, with one message
whether the file exists or not.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import BinaryIO

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.fields.files import FieldFile
from django.utils import timezone

from leaderboard.accounts.models import Team
from leaderboard.accounts.selectors import team_of_user, user_is_organizer
from leaderboard.challenges.models import (
    Challenge,
    DatasetFile,
    FileDownload,
    FilePortion,
    Phase,
    PhaseKind,
    Split,
    SubmissionKind,
)
from leaderboard.challenges.selectors import dataset_label, datasets_public_order, phase_prediction_targets
from leaderboard.challenges.suites import suite_for

logger = logging.getLogger(__name__)

# The one answer to a file URL the caller may not use, whether or not the file exists:
# a different answer would tell outsiders which datasets and portions exist.
NO_FILE_MESSAGE = (
    "No such file, or it is not available to you: data files are for members of a team "
    "registered in this challenge, once the phase they belong to has opened."
)
KIT_KEY = "starting-kit"
_CONTENT_TYPES = (
    (".gz", "application/gzip"),
    (".zip", "application/zip"),
    (".jsonl", "application/jsonl"),
    (".json", "application/json"),
)


class DataKind(enum.StrEnum):
    """What a download holds; also the first part of its URL and of its ``FileDownload`` key."""

    TRAIN = "train"
    DEV = "dev"
    TEST_INPUTS = "test-inputs"


class Viewer(enum.StrEnum):
    ORGANIZER = "organizer"
    MEMBER = "member"  # of a team registered in this challenge
    OUTSIDER = "outsider"  # logged in, no team here
    ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class DataFile:
    """One row of the Data page.  ``key`` is empty for a dataset that has nothing to download."""

    key: str
    label: str
    split: str
    what: str
    filename: str = ""
    size_bytes: int | None = None
    sha256: str = ""
    n_questions: int | None = None
    opens_at: dt.datetime | None = None
    # May this viewer download it now?
    available: bool = False
    # Organizers only: how often it was downloaded, and when last.
    downloads: int | None = None
    last_download_at: dt.datetime | None = None

    @property
    def kind(self) -> str:
        return self.key.split("/", 1)[0] if self.key else "no-download"

    @property
    def dataset_slug(self) -> str:
        return self.key.split("/", 1)[1] if "/" in self.key else ""


@dataclass(frozen=True)
class DataSection:
    """The files of one phase (or the training files, with ``phase`` None)."""

    title: str
    phase: Phase | None
    files: list[DataFile]


@dataclass(frozen=True)
class DataListing:
    challenge: Challenge
    viewer: Viewer
    team: Team | None
    sections: list[DataSection]
    kit: DataFile

    @property
    def may_download(self) -> bool:
        return self.viewer in (Viewer.ORGANIZER, Viewer.MEMBER)


@dataclass(frozen=True)
class ServedFile:
    """A file a caller may download: what to stream, under which name and type."""

    key: str
    filename: str
    content_type: str
    path: str

    def open(self) -> BinaryIO:
        return open(self.path, "rb")  # FileResponse closes it


@dataclass(frozen=True)
class _Offer:
    """A downloadable dataset file and the earliest moment teams may fetch it."""

    key: str
    kind: DataKind
    record: DatasetFile
    opens_at: dt.datetime | None

    @property
    def stored(self) -> FieldFile:
        # Inputs for the test portion (answers removed); the gold file otherwise.
        return self.record.inputs if self.kind is DataKind.TEST_INPUTS else self.record.gold


@dataclass(frozen=True)
class _Catalogue:
    """Everything the Data page of a challenge offers, computed once per request."""

    offers: dict[str, _Offer]  # every downloadable file, by key
    training: list[str]  # keys of the training files, in dataset order
    # Per phase: each dataset file of its portion, with its key ("" = nothing to download).
    phase_rows: list[tuple[Phase, list[tuple[DatasetFile, str]]]]


def content_type_for(filename: str) -> str:
    return next((ctype for suffix, ctype in _CONTENT_TYPES if filename.endswith(suffix)), "application/octet-stream")


def _earliest(values: Iterable[dt.datetime | None]) -> dt.datetime | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _is_servable(kind: DataKind, record: DatasetFile) -> bool:
    """The last guard before bytes leave: whatever the listing says, never test gold, never Split III."""
    if record.dataset.split == Split.III:
        return False
    if kind is DataKind.TEST_INPUTS:
        return record.portion == FilePortion.TEST and bool(record.inputs)
    if kind is DataKind.TRAIN:
        return record.portion == FilePortion.TRAIN and record.dataset.split == Split.I
    return kind is DataKind.DEV and record.portion == FilePortion.DEV


def _kind_in_phase(phase: Phase, record: DatasetFile, scored_by_files: set[int]) -> DataKind | None:
    """What a phase lets teams download of one dataset file of its portion, if anything."""
    if record.dataset.split == Split.III:
        return None  # runs on systems only, revealed or not
    if phase.portion == PhaseKind.DEV:
        return DataKind.DEV
    if record.dataset_id in scored_by_files:
        return DataKind.TEST_INPUTS
    return None  # a hidden test portion that only systems run on


def _catalogue(challenge: Challenge) -> _Catalogue:
    phases = list(challenge.phases.all())
    records = list(
        DatasetFile.objects.filter(dataset__challenge=challenge)
        .select_related("dataset")
        .order_by("dataset__order", "dataset__slug")
    )
    # Sealed datasets last, by alias (datasets_public_order), whoever reads the page.
    position = {ds.pk: i for i, ds in enumerate(datasets_public_order({r.dataset.pk: r.dataset for r in records}
                                                                      .values()))}
    records.sort(key=lambda r: position[r.dataset.pk])
    offers: dict[str, _Offer] = {}

    def offer(kind: DataKind, record: DatasetFile, opens_at: dt.datetime | None) -> str:
        if not _is_servable(kind, record):
            return ""
        key = f"{kind}/{record.dataset.slug}"
        earlier = offers[key].opens_at if key in offers else None
        # A file several phases offer opens with the first of them.
        offers[key] = _Offer(key, kind, record, _earliest([earlier, opens_at]))
        return key

    first_opening = _earliest(p.opens_at for p in phases)
    training = [offer(DataKind.TRAIN, r, first_opening) for r in records if r.portion == FilePortion.TRAIN]
    phase_rows = []
    for phase in phases:
        takes_files = phase.portion == PhaseKind.TEST and SubmissionKind.PREDICTIONS in phase.allowed_kinds
        # Exactly the datasets a prediction file for this phase must answer.
        scored = {ds.pk for ds, _ in phase_prediction_targets(phase=phase)} if takes_files else set()
        row = []
        for record in records:
            if record.portion != phase.portion:
                continue
            kind = _kind_in_phase(phase, record, scored)
            row.append((record, offer(kind, record, phase.opens_at) if kind else ""))
        phase_rows.append((phase, row))
    return _Catalogue(offers=offers, training=[k for k in training if k], phase_rows=phase_rows)


def dev_downloads(*, challenge: Challenge) -> list[tuple[DatasetFile, str]]:
    """The dev files of the Data page with their download names, in page order (the starting kit's data)."""
    suffix = suite_for(challenge).gold_suffix
    return [
        (offer.record, _download_name(challenge, offer, suffix))
        for offer in _catalogue(challenge).offers.values()
        if offer.kind is DataKind.DEV
    ]


def kit_opens_at(phases: Iterable[Phase]) -> dt.datetime | None:
    """The starting kit holds dev data, so it opens with the first dev-portion phase (else the first phase)."""
    phases = list(phases)
    return _earliest(p.opens_at for p in phases if p.portion == PhaseKind.DEV) or _earliest(
        p.opens_at for p in phases
    )


def viewer_of(*, user: AbstractBaseUser | AnonymousUser, challenge: Challenge) -> tuple[Viewer, Team | None]:
    team = team_of_user(user=user, challenge=challenge)
    if user_is_organizer(user=user, challenge=challenge):
        return Viewer.ORGANIZER, team
    if team is not None:
        return Viewer.MEMBER, team
    return (Viewer.OUTSIDER if user.is_authenticated else Viewer.ANONYMOUS), None


def _may_download(viewer: Viewer, opens_at: dt.datetime | None, now: dt.datetime) -> bool:
    if viewer is Viewer.ORGANIZER:
        return True
    return viewer is Viewer.MEMBER and opens_at is not None and opens_at <= now


@lru_cache(maxsize=512)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    # Stored files are written once under content-derived names; size and mtime in the
    # key still make an edited file hash again.  Streamed: files can be hundreds of MB.
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def file_fingerprint(path: str) -> tuple[int, str] | None:
    """(size, sha256) of a stored file, or None if it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, _sha256_of(path, st.st_size, st.st_mtime_ns)


_WHAT = {
    DataKind.TRAIN: "training data, with answers",
    DataKind.DEV: "dev portion, with answers",
    DataKind.TEST_INPUTS: "test questions and contexts, no answers",
}


def _download_name(challenge: Challenge, offer: _Offer, suffix: str) -> str:
    portion = "test-inputs" if offer.kind is DataKind.TEST_INPUTS else offer.record.portion
    return f"{challenge.slug}-{offer.record.dataset.slug}-{portion}{suffix}"


def _offer_row(challenge: Challenge, offer: _Offer, *, suffix: str, viewer: Viewer, now: dt.datetime,
               counts: dict[str, FileDownload]) -> DataFile:
    record = offer.record
    if offer.kind is DataKind.TEST_INPUTS:
        fingerprint = file_fingerprint(record.inputs.path)
        size, sha = fingerprint if fingerprint else (None, "")
    else:
        size, sha = record.size_bytes, record.sha256
    count = counts.get(offer.key)
    organizer = viewer is Viewer.ORGANIZER
    return DataFile(
        key=offer.key,
        label=offer.record.dataset.name,
        split=offer.record.dataset.split,
        what=_WHAT[offer.kind],
        filename=_download_name(challenge, offer, suffix),
        size_bytes=size,
        sha256=sha,
        n_questions=record.n_questions,
        opens_at=offer.opens_at,
        available=_may_download(viewer, offer.opens_at, now) and size is not None,
        downloads=(count.count if count else 0) if organizer else None,
        last_download_at=count.last_at if organizer and count else None,
    )


def data_listing_get(
    *, challenge: Challenge, user: AbstractBaseUser | AnonymousUser, now: dt.datetime | None = None
) -> DataListing:
    """The Data page as this user may see it (the API lists the same)."""
    now = now or timezone.now()
    viewer, team = viewer_of(user=user, challenge=challenge)
    organizer = viewer is Viewer.ORGANIZER
    suffix = suite_for(challenge).gold_suffix
    catalogue = _catalogue(challenge)
    counts = {d.key: d for d in FileDownload.objects.filter(challenge=challenge)} if organizer else {}
    rendered = {key: _offer_row(challenge, offer, suffix=suffix, viewer=viewer, now=now, counts=counts)
                for key, offer in catalogue.offers.items()}
    sections = []
    if catalogue.training:
        sections.append(DataSection("Training data (Split I)", None, [rendered[k] for k in catalogue.training]))
    for phase, keyed in catalogue.phase_rows:
        files = []
        for record, key in keyed:
            if key:
                files.append(rendered[key])
                continue
            ds = record.dataset
            files.append(DataFile(
                key="",
                # The Data page is a public address: a sealed dataset by its alias, whoever reads it.
                label=dataset_label(ds, reveal_sealed=False),
                split=ds.split,
                # Same words for a sealed dataset and any other hidden one: nothing to tell them apart.
                what="runs on systems only, no download",
            ))
        sections.append(DataSection(phase.name, phase, files))
    # Imported here: the kit builder reads this module's rules (dev_downloads).
    from leaderboard.challenges.starting_kit import starting_kit_build

    built = starting_kit_build(challenge=challenge)
    opens = kit_opens_at(challenge.phases.all())
    count = counts.get(KIT_KEY)
    kit = DataFile(
        key=KIT_KEY,
        label="Starting kit",
        split="",
        what="contract and limits, sample input, baseline system, local scoring",
        filename=built.filename,
        size_bytes=built.size_bytes,
        sha256=built.sha256,
        opens_at=opens,
        available=_may_download(viewer, opens, now),
        downloads=(count.count if count else 0) if organizer else None,
        last_download_at=count.last_at if organizer and count else None,
    )
    return DataListing(challenge=challenge, viewer=viewer, team=team, sections=sections, kit=kit)


def data_file_get(
    *, challenge: Challenge, user: AbstractBaseUser | AnonymousUser, kind: str, dataset_slug: str,
    now: dt.datetime | None = None,
) -> ServedFile | None:
    """The file behind ``/data/<kind>/<dataset>/`` if this user may download it now; None otherwise.

    None covers "no such file" and "not yours" alike, so callers answer both the same way.
    """
    try:
        data_kind = DataKind(kind)
    except ValueError:
        return None
    offer = _catalogue(challenge).offers.get(f"{data_kind}/{dataset_slug}")
    if offer is None or not _is_servable(offer.kind, offer.record):
        return None
    viewer, _ = viewer_of(user=user, challenge=challenge)
    if not _may_download(viewer, offer.opens_at, now or timezone.now()):
        return None
    filename = _download_name(challenge, offer, suite_for(challenge).gold_suffix)
    return ServedFile(key=offer.key, filename=filename, content_type=content_type_for(filename),
                      path=offer.stored.path)


def starting_kit_get(
    *, challenge: Challenge, user: AbstractBaseUser | AnonymousUser, now: dt.datetime | None = None
) -> ServedFile | None:
    """The starting kit if this user may download it now (same rule as the dev data); None otherwise."""
    viewer, _ = viewer_of(user=user, challenge=challenge)
    if not _may_download(viewer, kit_opens_at(challenge.phases.all()), now or timezone.now()):
        return None
    from leaderboard.challenges.starting_kit import starting_kit_build

    built = starting_kit_build(challenge=challenge)
    return ServedFile(key=KIT_KEY, filename=built.filename, content_type="application/zip", path=str(built.path))


def file_download_record(*, challenge: Challenge, key: str, now: dt.datetime | None = None) -> None:
    """Count one download of ``key``: an F() update, so concurrent downloads are all counted."""
    now = now or timezone.now()
    if FileDownload.objects.filter(challenge=challenge, key=key).update(count=F("count") + 1, last_at=now):
        return
    try:
        with transaction.atomic():
            FileDownload.objects.create(challenge=challenge, key=key, count=1, last_at=now)
    except IntegrityError:
        # Another request created the row between our update and insert: count on it.
        FileDownload.objects.filter(challenge=challenge, key=key).update(count=F("count") + 1, last_at=now)

