"""The cast for platform tests (after healthchecks' Alice, Bob and Charlie).

- alice owns team "Alpha"; bob is a member of it;
- charlie owns team "Charlie's" (the other team);
- oscar organizes the challenge; root is a superuser (admin);
- dave has an account but no team (an outsider); the anonymous public has none.

The challenge is a small MRQA-style one built from committed demo data:
SQuAD (Split I, dev), XQuAD-en (Split II, dev + test) and CoQA (Split III, sealed, test).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import Challenge, Phase

REPO = Path(__file__).resolve().parents[2]
DEMO_DATA = REPO / "deploy" / "demo" / "data"


def mrqa_gold(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            if "header" in obj:
                continue
            for qa in obj["qas"]:
                out[qa["qid"]] = qa["answers"]
    return out


def gold_predictions(portion: str = "dev", *, wrong_every: int = 0) -> dict[str, dict[str, str]]:
    """Predictions from the gold answers (every n-th one wrong, to vary scores)."""
    files = {"squad": "SQuAD", "xquad-en": "XQuAD-en"} if portion == "dev" else {"xquad-en": "XQuAD-en"}
    preds = {}
    for slug, name in files.items():
        gold = mrqa_gold(DEMO_DATA / "mrqa" / f"{name}.{portion}.jsonl.gz")
        preds[slug] = {
            qid: ("no idea" if wrong_every and i % wrong_every == 0 else answers[0])
            for i, (qid, answers) in enumerate(gold.items())
        }
    return preds


def upload(content: bytes | str | dict, name: str = "preds.json") -> SimpleUploadedFile:
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode("utf-8")
    return SimpleUploadedFile(name, content, content_type="application/json")


SPEC = f"""
slug: demo
title: Demo MRQA
metric_suite: mrqa
staff: [oscar]
# The test phase takes prediction files and ranks on CoQA (Split III), which they cannot answer.
ranking: {{incomplete: zero}}
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z, closes_at: 2099-01-01T00:00:00Z,
     quota: {{per_day: 5}}, allowed_kinds: [predictions]}}
  - {{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions]}}
datasets:
  - {{slug: squad, name: SQuAD, split: I, files: {{dev: {DEMO_DATA}/mrqa/SQuAD.dev.jsonl.gz}}}}
  - {{slug: xquad-en, name: XQuAD-en, split: II, files: {{dev: {DEMO_DATA}/mrqa/XQuAD-en.dev.jsonl.gz,
      test: {DEMO_DATA}/mrqa/XQuAD-en.test.jsonl.gz}}}}
  - {{slug: coqa, name: CoQA, split: III, sealed_alias: Hidden-07, files: {{test: {DEMO_DATA}/mrqa/CoQA.test.jsonl.gz}}}}
"""


@dataclass
class Cast:
    challenge: Challenge
    dev: Phase
    test: Phase
    alice: User
    bob: User
    charlie: User
    dave: User
    oscar: User
    root: User
    alpha: Team
    charlies: Team

    def client(self, who: str | None) -> Client:
        client = Client()
        if who is not None:
            client.force_login(getattr(self, who))
        return client




def now() -> dt.datetime:
    return timezone.now()
