"""Nothing a team downloads names a sealed dataset (issue 22, section 4): the starting kit's every
member, its scoring library's wheel and every file in it included (its help once gave ``DROP.jsonl.gz``
as an example).

The library names the benchmark formats it scores (CoQA among them), the same bytes for every
challenge, so a sealed dataset that bears a format's name may appear there and nowhere else.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from django.contrib.auth.models import User

from leaderboard.challenges.starting_kit import SCORING_DIR, starting_kit_build
from leaderboard.submissions.reload import challenge_load
from scoring.inputs import FORMATS
from tests.builders.staged import WALK_SPEC

SEALED = ("CoQA", "DROP", "Quoref")


def test_no_member_of_the_kit_names_a_sealed_dataset(db: None, tmp_path: Path) -> None:
    User.objects.create_user("oscar")
    spec = tmp_path / "walk.yaml"
    spec.write_text(WALK_SPEC, encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    kit = starting_kit_build(challenge=challenge)
    with zipfile.ZipFile(kit.path) as archive:
        members = {name: archive.read(name).decode("utf-8", "replace") for name in archive.namelist()
                   if not name.endswith((".gz", ".zip", ".whl"))}
        [wheel] = [name for name in archive.namelist() if name.endswith(".whl")]
        with zipfile.ZipFile(io.BytesIO(archive.read(wheel))) as library_wheel:
            library = {f"{wheel}/{name}": library_wheel.read(name).decode("utf-8", "replace")
                       for name in library_wheel.namelist()}
    assert len([name for name in library if name.endswith(".py")]) == len(list(SCORING_DIR.glob("*.py")))
    members |= library
    for name, text in members.items():
        for sealed in SEALED:
            if name in library and sealed.lower() in FORMATS:
                continue  # a format the library scores, named alike in every challenge's kit
            assert sealed not in text and sealed.lower() not in text.lower().split("/"), (name, sealed)
        assert not any(alias in text for alias in ("Hidden-Z", "Hidden-B", "Hidden-M")), name
