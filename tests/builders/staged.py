"""A challenge with a staged reveal (sealed datasets revealed in stages) and board rows on it."""

from __future__ import annotations

from django.contrib.auth.models import User

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Dataset, Phase, SubmissionKind
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.scores import scores_write
from tests.builders.cast import DEMO_DATA

MRQA = DEMO_DATA / "mrqa"


SPEC = f"""
slug: staged
title: Staged reveal
metric_suite: mrqa
ranking_rule: latest
staff: [oscar]
{{sealing}}
phases:
  - {{{{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [docker_image]}}}}
datasets:
  - {{{{slug: xquad-en, name: XQuAD-en, split: II, files: {{{{test: {MRQA}/XQuAD-en.test.jsonl.gz}}}}}}}}
  - {{{{slug: coqa, name: CoQA, split: III, sealed_alias: Hidden-A, {{coqa}}files: {{{{test: {MRQA}/CoQA.test.jsonl.gz}}}}}}}}
  - {{{{slug: drop, name: DROP, split: III, sealed_alias: Hidden-B, {{drop}}files: {{{{test: {MRQA}/DROP.test.jsonl.gz}}}}}}}}
"""


def system_row(phase: Phase, name: str, f1: dict[str, float]) -> None:
    user = User.objects.create_user(name)
    team = team_create(challenge=phase.challenge, name=name, owner=user)
    submission = Submission.objects.create(team=team, phase=phase, kind=SubmissionKind.DOCKER_IMAGE,
                                           status=Status.SCORING)
    datasets = {d.slug: d for d in Dataset.objects.filter(challenge=phase.challenge)}
    scores_write(submission=submission, results={
        datasets[slug]: DatasetResult(metrics={"f1": v, "em": v - 5}, per_example=[]) for slug, v in f1.items()})


# Three sealed datasets whose real names (CoQA < DROP < Quoref, the spec's order too) and aliases
# (Hidden-Z, Hidden-B, Hidden-M) sort differently: by position, a team would match them.
WALK_SPEC = f"""
slug: walk
title: Order walk
metric_suite: mrqa
ranking_rule: latest
staff: [oscar]
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [docker_image]}}
  - {{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [docker_image]}}
datasets:
  - {{slug: xquad-en, name: XQuAD-en, split: II, files: {{dev: {MRQA}/XQuAD-en.dev.jsonl.gz, test: {MRQA}/XQuAD-en.test.jsonl.gz}}}}
  - {{slug: coqa, name: CoQA, split: III, sealed_alias: Hidden-Z, files: {{test: {MRQA}/CoQA.test.jsonl.gz}}}}
  - {{slug: drop, name: DROP, split: III, sealed_alias: Hidden-B, files: {{test: {MRQA}/DROP.test.jsonl.gz}}}}
  - {{slug: quoref, name: Quoref, split: III, sealed_alias: Hidden-M, files: {{test: {MRQA}/Quoref.test.jsonl.gz}}}}
  - {{slug: adversarialqa, name: AdversarialQA, split: II, files: {{dev: {MRQA}/AdversarialQA.dev.jsonl.gz, test: {MRQA}/AdversarialQA.test.jsonl.gz}}}}
"""
