"""Boards for layout tests: the wide MRQA demo board and a board of a thousand rows.

Both are built through the services a real challenge goes through (``challenge_load`` and
``results_import``), so what the pages render is what an organizer's import would give.
"""

from __future__ import annotations

import random
from pathlib import Path

from django.contrib.auth.models import User

from leaderboard.challenges.models import Phase
from leaderboard.rankings.selectors import board_datasets
from leaderboard.submissions.imports import ImportedEntry, results_import
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import DEMO_DATA, REPO

DEMO_SPEC = REPO / "deploy" / "demo" / "mrqa-demo.yaml"
THOUSAND = 1000

# A dozen rows named as MRQA 2019's were, plus the long names that used to wrap into four lines
# and a name a spreadsheet would run as a formula (it must reach the CSV neutralised).
WIDE_TEAMS: list[tuple[str, str]] = [
    ("D-NET", "Baidu"),
    ("Delphi", "Allen Institute for AI"),
    ("HLTC", "HKUST"),
    ("BERT-cased-whole-word-masking multi-task ensemble with adversarial training", "Clova AI"),
    ("FT_XLNet", "Harbin Institute of Technology"),
    ("HierAtt", "Anonymous"),
    ("BERT-Multi-Finetune", "Beijing Language and Culture University"),
    ("CLER", "Tokyo Institute of Technology"),
    ('=HYPERLINK("http://evil.example/","click me")', "@risk"),
    ("Adv. Train", "University of Washington"),
    ("PAL IN DOMAIN", "UCI"),
    ("BERT large baseline", "MRQA Organizers"),
]


def wide_board_phase(tmp_path: Path) -> Phase:
    """The MRQA demo challenge with all eight of its datasets in the test phase, and a dozen rows.

    The demo's test phase has seven datasets (SQuAD has no test portion there); SQuAD's
    committed test file is added here, so the board is as wide as the demo can make it:
    eight datasets (three of them sealed Split III ones) with EM and F1, and the aggregates.
    """
    User.objects.get_or_create(username="organizer")
    text = DEMO_SPEC.read_text().replace("data/mrqa/", f"{DEMO_DATA}/mrqa/")
    squad_dev = f"dev: {DEMO_DATA}/mrqa/SQuAD.dev.jsonl.gz}}"
    assert squad_dev in text
    text = text.replace(squad_dev, f"dev: {DEMO_DATA}/mrqa/SQuAD.dev.jsonl.gz, test: {DEMO_DATA}/mrqa/SQuAD.test.jsonl.gz}}")
    spec = tmp_path / "mrqa-demo-wide.yaml"
    spec.write_text(text)
    challenge = challenge_load(spec_path=spec)
    phase = challenge.phases.get(slug="test")
    slugs = [ds.slug for ds in board_datasets(phase=phase)]
    assert len(slugs) == 8, slugs
    rng = random.Random(2019)
    entries = []
    for i, (name, affiliation) in enumerate(WIDE_TEAMS):
        scores: dict[str, dict[str, float | None]] = {}
        for slug in slugs:
            f1 = round(rng.uniform(35, 90) - i, 2)
            scores[slug] = {"f1": f1, "em": round(f1 - rng.uniform(5, 15), 2)}
        entries.append(ImportedEntry(name=name, affiliation=affiliation, scores=scores,
                                     is_baseline=name == "BERT large baseline"))
    results_import(phase=phase, entries=entries)
    return phase


def thousand_row_phase(phase: Phase, rows: int = THOUSAND) -> Phase:
    """``rows`` teams on ``phase``'s board with distinct averages, so team ``Team 0001`` ranks 1 and
    ``Team 1000`` ranks 1000 (every dataset gets the same F1, so the macro F1 is that F1)."""
    slugs = [ds.slug for ds in board_datasets(phase=phase)]
    results_import(phase=phase, entries=[
        ImportedEntry(
            name=f"Team {n:04d}", affiliation=f"Lab {n % 37}", is_baseline=False,
            scores={slug: {"f1": 95 - n * 0.05, "em": 85 - n * 0.05} for slug in slugs},
        )
        for n in range(1, rows + 1)
    ])
    return phase
