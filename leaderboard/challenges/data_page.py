"""The reads of a challenge's Data page: its listing, a data file and the starting kit, for one viewer.

They combine the rules and the catalogue (``downloads``) with the kit (``starting_kit``, which reads
the rules too), so they stand above both.  Who the viewer is (organizer, member of a team here,
outsider, anonymous) is the page's question: ``accounts.selectors.viewer_of`` answers it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils import timezone

from leaderboard.challenges.downloads import (
    KIT_KEY,
    DataKind,
    DataOffer,
    ServedFile,
    content_type_for,
    data_catalogue,
    download_name,
    file_fingerprint,
    is_servable,
    kit_opens_at,
    may_download,
)
from leaderboard.challenges.models import Challenge, FileDownload, Phase
from leaderboard.challenges.selectors import Viewer, dataset_label
from leaderboard.challenges.starting_kit import starting_kit_build
from leaderboard.challenges.suites import suite_for


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
    sections: list[DataSection]
    kit: DataFile | None  # None where the challenge has no data (DataCatalogue.has_data)
    kit_description: str = ""

    @property
    def may_download(self) -> bool:
        return self.viewer in (Viewer.ORGANIZER, Viewer.MEMBER)


_WHAT = {
    DataKind.TRAIN: "training data, with answers",
    DataKind.DEV: "dev portion, with answers",
    DataKind.TEST_INPUTS: "test questions and contexts, no answers",
}


def _offer_row(challenge: Challenge, offer: DataOffer, *, suffix: str, viewer: Viewer, now: dt.datetime,
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
        filename=download_name(challenge, offer, suffix),
        size_bytes=size,
        sha256=sha,
        n_questions=record.n_questions,
        opens_at=offer.opens_at,
        available=may_download(viewer, offer.opens_at, now) and size is not None,
        downloads=(count.count if count else 0) if organizer else None,
        last_download_at=count.last_at if organizer and count else None,
    )


def data_listing_get(*, challenge: Challenge, viewer: Viewer, now: dt.datetime | None = None) -> DataListing:
    """The Data page as this viewer may see it (the API lists the same)."""
    now = now or timezone.now()
    organizer = viewer is Viewer.ORGANIZER
    suffix = suite_for(challenge).gold_suffix
    offered = data_catalogue(challenge)
    counts = {d.key: d for d in FileDownload.objects.filter(challenge=challenge)} if organizer else {}
    rendered = {key: _offer_row(challenge, offer, suffix=suffix, viewer=viewer, now=now, counts=counts)
                for key, offer in offered.offers.items()}
    sections = []
    if offered.training:
        sections.append(DataSection("Training data (Split I)", None, [rendered[k] for k in offered.training]))
    for phase, keyed in offered.phase_rows:
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
    if not offered.has_data:
        return DataListing(challenge=challenge, viewer=viewer, sections=sections, kit=None)
    built = starting_kit_build(challenge=challenge)
    opens = kit_opens_at(challenge.phases.all())
    count = counts.get(KIT_KEY)
    kit = DataFile(
        key=KIT_KEY,
        label="Starting kit",
        split="",
        what=built.summary,
        filename=built.filename,
        size_bytes=built.size_bytes,
        sha256=built.sha256,
        opens_at=opens,
        available=may_download(viewer, opens, now),
        downloads=(count.count if count else 0) if organizer else None,
        last_download_at=count.last_at if organizer and count else None,
    )
    return DataListing(challenge=challenge, viewer=viewer, sections=sections, kit=kit,
                       kit_description=built.description)


def data_file_get(
    *, challenge: Challenge, viewer: Viewer, kind: str, dataset_slug: str, now: dt.datetime | None = None,
) -> ServedFile | None:
    """The file behind ``/data/<kind>/<dataset>/`` if this viewer may download it now; None otherwise.

    None covers "no such file" and "not yours" alike, so callers answer both the same way.
    """
    try:
        data_kind = DataKind(kind)
    except ValueError:
        return None
    offer = data_catalogue(challenge).offers.get(f"{data_kind}/{dataset_slug}")
    if offer is None or not is_servable(offer.kind, offer.record):
        return None
    if not may_download(viewer, offer.opens_at, now or timezone.now()):
        return None
    filename = download_name(challenge, offer, suite_for(challenge).gold_suffix)
    return ServedFile(key=offer.key, filename=filename, content_type=content_type_for(filename),
                      path=offer.stored.path)


def starting_kit_get(*, challenge: Challenge, viewer: Viewer, now: dt.datetime | None = None) -> ServedFile | None:
    """The starting kit if this viewer may download it now (same rule as the dev data); None otherwise."""
    if not may_download(viewer, kit_opens_at(challenge.phases.all()), now or timezone.now()):
        return None
    if not data_catalogue(challenge).has_data:
        return None
    built = starting_kit_build(challenge=challenge)
    return ServedFile(key=KIT_KEY, filename=built.filename, content_type="application/zip", path=str(built.path))
