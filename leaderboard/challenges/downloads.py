"""What a challenge's Data page offers, who may download it and when; download counts.

The rules and the catalogue, written once here for the page, the API and the file views (their
reads, which add the starting kit, are ``data_page``; the kit builder reads ``dev_downloads``):

* **training files** (portion ``train``, Split I only): once the challenge's first phase opens;
* **dev portions of Split I and II datasets, with answers** (public by definition): once a phase
  that scores the dev portion opens;
* **answer-free inputs of a hidden test portion** (``DatasetFile.inputs``, the very file a system
  run reads) for a phase that takes prediction files on it, for exactly the datasets that phase
  scores (``phase_prediction_targets``): once that phase opens;
* **the starting kit** (``challenges/starting_kit.py``): when the dev data opens, if the challenge has
  data at all (``DataCatalogue.has_data``);
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

from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.fields.files import FieldFile
from django.utils import timezone

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
from leaderboard.challenges.selectors import (
    Viewer,
    datasets_public_order,
    phase_has_dataset,
    phase_prediction_targets,
)
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
class DataOffer:
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
class DataCatalogue:
    """Everything the Data page of a challenge offers, computed once per request."""

    offers: dict[str, DataOffer]  # every downloadable file, by key
    training: list[str]  # keys of the training files, in dataset order
    # Per phase: each dataset file of its portion, with its key ("" = nothing to download).
    phase_rows: list[tuple[Phase, list[tuple[DatasetFile, str]]]]

    @property
    def has_data(self) -> bool:
        """Whether the challenge has any data file, downloadable or run on by systems only: the one
        rule behind a phase's "no dataset has data" and the starting kit (none for a board of
        published results, which has no data to start from)."""
        return bool(self.training) or any(rows for _, rows in self.phase_rows)


def content_type_for(filename: str) -> str:
    return next((ctype for suffix, ctype in _CONTENT_TYPES if filename.endswith(suffix)), "application/octet-stream")


def _earliest(values: Iterable[dt.datetime | None]) -> dt.datetime | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def is_servable(kind: DataKind, record: DatasetFile) -> bool:
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


def data_catalogue(challenge: Challenge) -> DataCatalogue:
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
    offers: dict[str, DataOffer] = {}

    def offer(kind: DataKind, record: DatasetFile, opens_at: dt.datetime | None) -> str:
        if not is_servable(kind, record):
            return ""
        key = f"{kind}/{record.dataset.slug}"
        earlier = offers[key].opens_at if key in offers else None
        # A file several phases offer opens with the first of them.
        offers[key] = DataOffer(key, kind, record, _earliest([earlier, opens_at]))
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
            if record.portion != phase.portion or not phase_has_dataset(phase, record.dataset):
                continue
            kind = _kind_in_phase(phase, record, scored)
            row.append((record, offer(kind, record, phase.opens_at) if kind else ""))
        phase_rows.append((phase, row))
    return DataCatalogue(offers=offers, training=[k for k in training if k], phase_rows=phase_rows)


def dev_downloads(*, challenge: Challenge) -> list[tuple[DatasetFile, str]]:
    """The dev files of the Data page with their download names, in page order (the starting kit's data)."""
    suffix = suite_for(challenge).gold_suffix
    return [
        (offer.record, download_name(challenge, offer, suffix))
        for offer in data_catalogue(challenge).offers.values()
        if offer.kind is DataKind.DEV
    ]


def kit_opens_at(phases: Iterable[Phase]) -> dt.datetime | None:
    """The starting kit holds dev data, so it opens with the first dev-portion phase (else the first phase)."""
    phases = list(phases)
    return _earliest(p.opens_at for p in phases if p.portion == PhaseKind.DEV) or _earliest(
        p.opens_at for p in phases
    )


def may_download(viewer: Viewer, opens_at: dt.datetime | None, now: dt.datetime) -> bool:
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


def download_name(challenge: Challenge, offer: DataOffer, suffix: str) -> str:
    portion = "test-inputs" if offer.kind is DataKind.TEST_INPUTS else offer.record.portion
    return f"{challenge.slug}-{offer.record.dataset.slug}-{portion}{suffix}"


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

