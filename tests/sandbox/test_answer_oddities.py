"""Issue 22, section 1, through real containers: an answer the platform cannot take is the team's fault.

A code bundle (tests/sandbox/oddities/emit.py) writes valid JSON with one answer of each oddity (a lone
surrogate, NUL, 4001 characters, a number, lists three deep) on the dev and the test phase, through
the real path (upload, queue, compute worker, internal API, control worker).  Each run fails as the
team's fault and counts; the same answers as a prediction file are refused in the same words; on
hidden data the team reads the verdict only.  The interactive path applies the same rule in the
compute worker: an answer it refuses ends the mode as the system's doing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import docker
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.challenges.selectors import phase_prediction_targets
from leaderboard.submissions.models import FailureCause, Status, Submission, Verdict
from leaderboard.submissions.selectors import quota_usage
from scoring.dialogs import Mode
from tests.builders import converse
from tests.builders.systems import Platform, bundle

pytestmark = pytest.mark.django_db(transaction=True)

EMIT = Path(__file__).resolve().parent / "oddities" / "emit.py"
VERDICTS = {"surrogate": Verdict.ANSWER_REFUSED, "nul": Verdict.ANSWER_REFUSED, "over_long": Verdict.ANSWER_REFUSED,
            "non_string": Verdict.OUTPUT_WRONG_SHAPE, "nested": Verdict.OUTPUT_WRONG_SHAPE}
UPLOADED = {"surrogate": "\ud800", "nul": "a\x00b", "over_long": "x" * 4001, "non_string": 5,
            "nested": {"answer": [[["x"]]]}}
_AFTER_ID = re.compile(r"id '[^']*': (.*)")


def _problem(reason: str) -> str:
    match = _AFTER_ID.search(reason)
    assert match is not None, reason
    return match.group(1)


def test_each_answer_oddity_is_a_counted_team_fault_in_the_same_words_on_both_channels(platform: Platform) -> None:
    cast = platform.cast
    source = EMIT.read_text()
    before = {phase: quota_usage(team=cast.alpha, phase=getattr(cast, phase)).used_today for phase in ("dev", "test")}
    pks = {(oddity, phase): platform.submit(bundle(("run.py", source.replace('ODDITY = "surrogate"',
                                                                               f'ODDITY = "{oddity}"', 1))),
                                            phase=phase)
           for oddity in VERDICTS for phase in ("dev", "test")}
    runs = {key: platform.wait_final(pk, timeout=180) for key, pk in pks.items()}
    alice = cast.client("alice")
    for (oddity, phase), run in runs.items():
        assert (run.status, run.failure_cause, run.verdict) == (Status.FAILED, FailureCause.PARTICIPANT,
                                                                VERDICTS[oddity]), (oddity, phase, run.failure_reason,
                                                                                    platform.logs())
        # The same answers as a prediction file: refused, in the same words after where they are.
        content: dict[str, dict[str, object]] = {}
        for n, (ds, f) in enumerate(phase_prediction_targets(phase=getattr(cast, phase))):
            content[ds.slug] = {qid: "x" for qid in f.qids}
            if n == 0:
                content[ds.slug][f.qids[0]] = UPLOADED[oddity]
        response = alice.post(f"/api/v1/challenges/{cast.challenge.slug}/submissions/",
                              {"phase": phase, "file": SimpleUploadedFile("preds.json", json.dumps(content).encode())})
        assert response.status_code == 400, response.content
        assert _problem(response.json()["detail"]) == _problem(run.failure_reason), (oddity, phase)
        team = alice.get(f"/api/v1/submissions/{run.pk}/").json()
        if phase == "test":  # hidden data: the verdict's words, nothing of the answer or its id
            label = Verdict(VERDICTS[oddity]).label
            assert team["failure_reason"].startswith(label[0].upper() + label[1:]), team["failure_reason"]
            assert "U+" not in team["failure_reason"] and "id '" not in team["failure_reason"]
        else:
            assert _problem(team["failure_reason"]) == _problem(run.failure_reason)
    # Every run counted: the quota moved by five on each phase; none was free.
    for phase in ("dev", "test"):
        assert quota_usage(team=cast.alpha, phase=getattr(cast, phase)).used_today == before[phase] + len(VERDICTS)
    assert not Submission.objects.filter(failure_cause=FailureCause.PLATFORM).exists()
    assert not platform.mails()  # no alert: nothing was the platform's


# The interactive path: one real container per oddity answers turn 1, then turn 2 with the oddity.
INTERACTIVE = r"""
import json, sys
for n, line in enumerate(sys.stdin):
    request = json.loads(line)
    answer = "fine" if n == 0 else ODDITY
    print(json.dumps({"id": request["id"], "answer": answer}), flush=True)
"""


@pytest.mark.parametrize(("oddity", "literal"), [("surrogate", '"\\ud800"'), ("nul", '"a\\u0000b"'),
                                                 ("over_long", '"x" * 4001')])
def test_an_interactive_answer_the_rule_refuses_ends_the_mode_as_the_systems_doing(
    engine: docker.DockerClient, tmp_path: Path, oddity: str, literal: str,
) -> None:
    [session], result = converse.run(engine, tmp_path, INTERACTIVE.replace("ODDITY", literal), Mode.OWN, turn_limit_s=5)
    assert result.verdict == "answer_refused", (result.reason, result.log)
    assert result.turns_answered == len(session.answers) == 1
    assert result.reason.startswith("turn 2: the answer ")
