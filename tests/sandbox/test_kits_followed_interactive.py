"""An interactive kit followed literally scores on the platform as its local harness said (issue 25).

The QuAC and CoQA demos answer turn by turn.  A team member follows the kit's README as written
(``tests/builders/kits.py``, as ``tests/kits/test_kits_followed.py`` does for every demo): the
README's ``python -m scoring converse`` line plays the Data page's dev dialogs with the kit's
conversational baseline on the participant's machine.  Then the kit's ``converse-bundle.zip`` is
submitted to the Development phase exactly as the README's ``curl`` line does (the systems API,
kind ``code_bundle``), and the real platform runs it: a compute worker plays the same dialogs with
it in a container per mode, over the internal API, and the control worker scores the answers.

Every figure of the board that does not measure time is equal, to the last digit, in the harness's
output and in the platform's scores: the F1 of each mode, the drop from gold to own history, and F1
by turn.  (Latency is each machine's own.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.challenges.models import Dataset
from leaderboard.submissions.models import Score, Status
from tests.builders.kits import DEMOS, interactive_demo, kit_checks, kit_follow
from tests.builders.systems import Platform

INTERACTIVE = [spec for spec in DEMOS if interactive_demo(spec)]

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("spec", INTERACTIVE, ids=[p.stem for p in INTERACTIVE])
def test_the_dev_phase_scores_the_kits_bundle_as_the_kits_harness_did(
    spec: Path, kit_venv: Path, tmp_path: Path, platform: Platform
) -> None:
    followed = kit_follow(spec, kit_venv, tmp_path / "kit")
    assert followed is not None, f"{spec.stem} has no kit"
    kit_checks(followed)
    challenge = followed.challenge
    dev = challenge.phases.get(portion="dev")
    assert dev.protocol_modes, "the dev phase plays the dialogs turn by turn"
    [dev_file] = followed.dev_files  # one dataset per conversational demo
    local = followed.harness[dev_file]

    # As the README's curl line: phase, kind, the kit's bundle as is.
    response = followed.client.post(
        f"/api/v1/challenges/{challenge.slug}/systems/",
        {"phase": dev.slug, "kind": "code_bundle",
         "file": SimpleUploadedFile("converse-bundle.zip", (followed.base / "converse-bundle.zip").read_bytes())},
    )
    assert response.status_code == 201, response.content
    submission = platform.wait_final(int(response.json()["id"]), timeout=240)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}\n{platform.logs()}"

    [dataset] = Dataset.objects.filter(challenge=challenge)
    scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset=dataset)}
    first, *others = dev.protocol_modes
    expected = {"f1": local[first]["f1"], **{f"{mode}_f1": local[mode]["f1"] for mode in others},
                **{k: v for k, v in local[first].items() if k.startswith("turn_")}}
    if "gold_own_drop" in local:
        expected["gold_own_drop"] = local["gold_own_drop"]
    assert len(expected) >= 6, expected  # every mode, the drop, and some turn positions
    for metric, value in expected.items():
        assert scores[metric] == pytest.approx(value, abs=1e-9), (metric, scores[metric], value)
    assert all(local[m]["turns_answered"] > 0 for m in dev.protocol_modes)
