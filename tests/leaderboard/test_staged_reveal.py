"""A partial reveal must not give away a dataset it leaves sealed (issue 15, §2).

While CoQA and DROP are both sealed, their Split III F1 (the mean of the two) is public: it
gives neither away.  Reveal CoQA alone and DROP = 2 x that average - CoQA, for anyone who
copied the board before.  Withholding the average from then on cannot undo a copy, so such a
reveal takes DROP with it (console), or is refused until the spec reveals both (reload).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from leaderboard.challenges.models import Challenge, Dataset, DatasetFile
from leaderboard.challenges.spec import SpecError
from leaderboard.console.selectors import dataset_reveal_preview
from leaderboard.console.services import dataset_reveal_audited
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.selectors import reveal_closure, reveal_exposes
from tests.builders.staged import MRQA, SPEC, system_row


def load(tmp_path: Path, *, coqa: bool = False, drop: bool = False, strict: bool = False) -> Challenge:
    spec = tmp_path / "staged.yaml"
    spec.write_text(SPEC.format(coqa="revealed: true, " if coqa else "", drop="revealed: true, " if drop else "",
                                sealing="sealed_aggregates: all" if strict else ""), encoding="utf-8")
    return challenge_load(spec_path=spec)


@pytest.fixture
def challenge(db: None, tmp_path: Path) -> Challenge:
    User.objects.create_user("oscar")
    challenge = load(tmp_path)
    system_row(challenge.phases.get(slug="test"), "alpha", {"xquad-en": 80.0, "coqa": 60.0, "drop": 40.0})
    return challenge


def test_revealing_one_of_two_sealed_datasets_takes_the_other_with_it(challenge: Challenge) -> None:
    coqa, drop = (Dataset.objects.get(challenge=challenge, slug=s) for s in ("coqa", "drop"))
    assert reveal_exposes(datasets=[coqa]) == [drop]
    assert reveal_closure(dataset=coqa) == [coqa, drop]
    assert reveal_exposes(datasets=[coqa, drop]) == []
    preview = dataset_reveal_preview(dataset=coqa)
    assert preview.together == ["DROP (Hidden-B)"] and preview.still_sealed == []
    assert not Dataset.objects.filter(revealed_at__isnull=False).exists()  # the preview changes nothing
    dataset_reveal_audited(dataset=coqa, actor=User.objects.get(username="oscar"), reason="the task ended")
    assert all(ds.revealed_at is not None for ds in Dataset.objects.filter(challenge=challenge, split="III"))
    entry = challenge.audit_entries.get(action="dataset.reveal")
    assert entry.details["together"] == ["drop"] and "DROP (Hidden-B)" in entry.target


def test_a_reload_that_reveals_one_of_them_is_refused_with_what_to_do(challenge: Challenge, tmp_path: Path) -> None:
    with pytest.raises(SpecError) as refused:
        load(tmp_path, coqa=True)
    message = str(refused.value)
    assert "would give away the score of DROP" in message and "Mark drop 'revealed: true' too" in message
    assert not Dataset.objects.filter(revealed_at__isnull=False).exists()
    load(tmp_path, coqa=True, drop=True)  # both together: nothing left sealed to give away
    assert Dataset.objects.filter(challenge=challenge, revealed_at__isnull=False).count() == 2


def test_without_scores_a_dataset_reveals_alone_and_strict_withholding_changes_nothing(db: None, tmp_path: Path) -> None:
    User.objects.create_user("oscar")
    challenge = load(tmp_path)
    coqa = Dataset.objects.get(challenge=challenge, slug="coqa")
    assert reveal_closure(dataset=coqa) == [coqa]  # no submission: no average was ever published
    # Strict from the start: still computed as if the default had published the averages (a policy
    # may have changed since, and copies outlive it), so DROP goes with CoQA.
    strict = load(tmp_path, strict=True)
    system_row(strict.phases.get(slug="test"), "alpha", {"xquad-en": 80.0, "coqa": 60.0, "drop": 40.0})
    assert [d.slug for d in reveal_exposes(datasets=[Dataset.objects.get(challenge=strict, slug="coqa")])] == ["drop"]


def test_a_third_sealed_dataset_keeps_the_first_reveal_alone_and_the_second_takes_it(
    db: None, tmp_path: Path,
) -> None:
    """With three sealed datasets, one reveal leaves two unknowns under one average: nothing follows.
    The second leaves one: it must take the third with it."""
    User.objects.create_user("oscar")
    spec = SPEC.replace(
        "  - {{slug: drop,",
        f"  - {{{{slug: quoref, name: Quoref, split: III, sealed_alias: Hidden-C, files: {{{{test: {MRQA}/Quoref.test.jsonl.gz}}}}}}}}\n  - {{{{slug: drop,",
    )
    path = tmp_path / "three.yaml"
    path.write_text(spec.format(coqa="", drop="", sealing=""), encoding="utf-8")
    challenge = challenge_load(spec_path=path)
    system_row(challenge.phases.get(slug="test"), "alpha",
               {"xquad-en": 80.0, "coqa": 60.0, "drop": 40.0, "quoref": 50.0})
    coqa, drop, quoref = (Dataset.objects.get(challenge=challenge, slug=s) for s in ("coqa", "drop", "quoref"))
    assert reveal_closure(dataset=coqa) == [coqa]
    dataset_reveal_audited(dataset=coqa, actor=User.objects.get(username="oscar"), reason="first")
    drop.refresh_from_db()
    assert set(reveal_closure(dataset=drop)) == {drop, quoref}
    assert DatasetFile.objects.filter(dataset=quoref).exists()


def test_a_strict_policy_now_does_not_undo_what_was_published_before(challenge: Challenge, tmp_path: Path) -> None:
    """The Split III F1 was public under the default policy; a reload that turns strict and reveals
    CoQA alone would still give DROP away to whoever copied it (found by review)."""
    with pytest.raises(SpecError, match="would give away the score of DROP"):
        load(tmp_path, coqa=True, strict=True)
    load(tmp_path, strict=True)  # strict, nothing revealed: accepted
    coqa, drop = (Dataset.objects.get(challenge=challenge, slug=s) for s in ("coqa", "drop"))
    assert reveal_closure(dataset=coqa) == [coqa, drop]
