"""The starting kit's baseline bundle runs under the real contract and scores what the kit's lines print.

A team downloads the kit from the Data page and submits its ``baseline-bundle.zip`` unchanged as a code
bundle to the dev phase: a real worker runs it sandboxed (it reads ``/input/manifest.json``, writes
``/output/<name>.json``) and the platform scores its output.  The same baseline, run locally from the
kit on the downloaded dev files and scored with the kit's ``python -m scoring`` lines, gives the same
per-dataset numbers.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from leaderboard.submissions.models import Score, Status
from tests.builders.data_page import run_kit_locally
from tests.builders.responses import body
from tests.builders.systems import Platform

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_kits_baseline_bundle_runs_on_the_platform_with_the_kits_local_scores(
    platform: Platform, tmp_path: Path
) -> None:
    client = platform.cast.client("alice")
    listing = client.get("/api/v1/challenges/demo/data/").json()
    kit = body(client.get("/c/demo/data/starting-kit.zip"))
    dev = {f["filename"]: body(client.get(f["url"].removeprefix("http://testserver")))
           for s in listing["sections"] for f in s["files"] if f["kind"] == "dev"}
    with zipfile.ZipFile(io.BytesIO(kit)) as z:
        bundle = z.read("demo-starting-kit/baseline-bundle.zip")

    pk = platform.submit(bundle, phase="dev", name="baseline-bundle.zip")
    submission = platform.wait_final(pk, timeout=180)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}\n{platform.logs()}"

    _, local = run_kit_locally(kit, dev, tmp_path)
    by_slug = {r["line"].rsplit("/", 1)[1].removesuffix(".json"): r["result"] for r in local}
    assert sorted(by_slug) == ["squad", "xquad-en"]
    for slug, result in by_slug.items():
        scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__slug=slug)}
        f1 = scores["f1"]
        assert f1 is not None and 0 < f1 < 100, (slug, scores)
        assert scores["f1"] == pytest.approx(result["f1"], abs=1e-9), slug
        assert scores["em"] == pytest.approx(result["exact_match"], abs=1e-9), slug
