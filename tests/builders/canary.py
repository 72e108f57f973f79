"""Canaries planted in the hidden data, and the system that tries to leak them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from leaderboard.challenges.models import Dataset, Split
from leaderboard.submissions.reload import dataset_gold_replace
from scoring import inputs
from tests.builders.cast import DEMO_DATA, Cast

CANARY = "RBCANARY9c41e2"


LEAK = Path(__file__).resolve().parents[1] / "sandbox" / "canary" / "leak.py"


HIDDEN = {"xquad-en": "XQuAD-en.test.jsonl.gz", "coqa": "CoQA.test.jsonl.gz", "drop": "DROP.test.jsonl.gz"}


def canary_record(slug: str) -> dict[str, object]:
    context = f"The {CANARY} of {slug} was opened in 1475 by the librarian."
    start = context.index("1475")
    return {
        "id": f"{CANARY}-context-{slug}",
        "context": context,
        "qas": [{
            "qid": f"{CANARY}-qid-{slug}",
            "question": f"When was the {CANARY} opened?",
            "answers": ["1475"],
            "detected_answers": [{"text": "1475", "char_spans": [[start, start + 3]], "token_spans": [[7, 7]]}],
        }],
    }


def plant_canaries(cast: Cast) -> set[str]:
    """Re-load the challenge's hidden test files with a canary context; return every hidden id."""
    ids: set[str] = set()
    # A second sealed dataset, named as a spec without an alias names it (HMAC of the secret).
    Dataset.objects.get_or_create(
        challenge=cast.challenge, slug="drop",
        defaults={"name": "DROP", "split": Split.III, "portions": ["test"], "order": 9,
                  "sealed_alias": inputs.alias_for(cast.challenge.secret.encode("ascii"), "drop")},
    )
    for slug, name in HIDDEN.items():
        lines = gzip.open(DEMO_DATA / "mrqa" / name, "rt", encoding="utf-8").read().splitlines()
        lines.append(json.dumps(canary_record(slug)))
        for line in lines[1:]:
            record = json.loads(line)
            ids.add(record["id"])
            ids.update(qa["qid"] for qa in record["qas"])
        content = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0)
        dataset = Dataset.objects.get(challenge=cast.challenge, slug=slug)
        dataset_gold_replace(dataset=dataset, portion="test", content=content, filename=name)
    return ids
