"""Specs with an evaluation campaign: the cast's MRQA challenge, and a conversational one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.builders.cast import DEMO_DATA, SPEC
from tests.builders.suites import quac_gold
from tests.builders.systems import TEST_LIMITS

# A domain the cast's test phase never had (MRQA's header names it DuoRC.SelfRC).
CAMPAIGN_GOLD = DEMO_DATA / "mrqa" / "DuoRC.SelfRC.test.jsonl.gz"
CAMPAIGN = {"slug": "fresh", "name": "Fresh domains 2026", "kind": "test",
            "opens_at": "2026-12-01T00:00:00Z", "closes_at": "2027-01-01T00:00:00Z"}


def _written(tmp_path: Path, spec: dict[str, Any], stem: str) -> Path:
    path = tmp_path / f"{stem}-{len(list(tmp_path.glob(f'{stem}-*')))}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def mrqa_campaign_spec(tmp_path: Path, *, campaign: dict[str, Any] | None = None, **changes: Any) -> Path:
    """The cast's spec with systems in its test phase, and (given ``campaign``) a campaign phase "fresh"
    with a sealed dataset of its own, DuoRC.SelfRC."""
    spec = yaml.safe_load(SPEC)
    spec["phases"][1]["allowed_kinds"] = ["predictions", "docker_image", "code_bundle"]
    spec["systems"] = {"limits": TEST_LIMITS}
    if campaign is not None:
        spec["phases"].append({**CAMPAIGN, "campaign": campaign})
        spec["datasets"].append({"slug": "duorc-selfrc", "name": "DuoRC.SelfRC", "split": "III", "phase": "fresh",
                                 "files": {"test": str(CAMPAIGN_GOLD)}})
    spec.update(changes)
    return _written(tmp_path, spec, "mrqa")


def quac_campaign_spec(tmp_path: Path, *, modes: list[str], campaign: bool) -> Path:
    """A QuAC challenge whose test phase runs systems turn by turn in ``modes``; with ``campaign``, a
    campaign of it on a sealed dataset of its own (the same dialogs, newly annotated, say)."""
    path = tmp_path / "val_v0.2.json"
    path.write_text(json.dumps(quac_gold()))
    spec: dict[str, Any] = {
        "slug": "talk", "title": "Talk", "metric_suite": "quac", "systems": {"limits": TEST_LIMITS},
        "phases": [{"slug": "test", "name": "Test", "kind": "test", "opens_at": "2020-01-01T00:00:00Z",
                    "closes_at": "2099-01-01T00:00:00Z", "allowed_kinds": ["docker_image", "code_bundle"],
                    "protocol": modes}],
        "datasets": [{"slug": "quac", "name": "QuAC", "split": "II", "files": {"test": str(path)}}],
    }
    if campaign:
        spec["phases"].append({**CAMPAIGN, "campaign": {"of": "test"}, "protocol": modes})
        spec["datasets"].append({"slug": "quac-again", "name": "QuAC re-annotated", "split": "III",
                                 "phase": "fresh", "files": {"test": str(path)}})
    return _written(tmp_path, spec, "talk")
