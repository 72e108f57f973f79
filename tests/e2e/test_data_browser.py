"""A participant gets the data from the Data page in a real browser, and the kit's numbers match the board's.

Headless Chromium against the live server: alice logs in, opens the Data page from the challenge
page, downloads the dev files and the starting kit, checks them against the sha256 the page shows,
runs the kit's baseline on the downloaded dev files and the kit's own ``python -m scoring`` lines
(subprocesses, from the unzipped kit), zips the predictions, submits them through the upload form,
and reads the same per-dataset EM and F1 on the submission page as the local scoring printed.
Needs Debian's ``chromium`` and ``chromium-driver`` (skipped without them, except in CI).
"""

from __future__ import annotations

import hashlib
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.challenges.models import Dataset
from leaderboard.challenges.services import dataset_file_put
from leaderboard.submissions.models import Score, Status, Submission
from tests.builders.browser import screenshot
from tests.builders.cast import Cast
from tests.builders.chromium import WAIT_SECONDS, chromium_driver
from tests.builders.data_page import TRAIN_FILE, run_kit_locally
from tests.builders.responses import streamed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def downloads_dir(tmp_path: Path) -> Path:
    path = tmp_path / "downloads"
    path.mkdir()
    return path


@pytest.fixture
def chromium(downloads_dir: Path) -> Iterator[object]:
    """Headless Chromium that saves downloads into ``downloads_dir`` without asking."""
    with chromium_driver(width=1366, downloads=downloads_dir) as driver:
        yield driver


def wait_for_download(folder: Path, name: str) -> bytes:
    deadline = time.monotonic() + WAIT_SECONDS
    path = folder / name
    while time.monotonic() < deadline:
        if path.exists() and not (folder / f"{name}.crdownload").exists():
            return path.read_bytes()
        time.sleep(0.1)
    raise AssertionError(f"{name} was not downloaded; the folder holds {sorted(p.name for p in folder.iterdir())}")


def test_a_participant_reproduces_the_dev_scores_from_the_data_page_downloads(
    cast: Cast, live_server: LiveServer, chromium: Any, downloads_dir: Path, tmp_path: Path
) -> None:
    driver = chromium
    wait = WebDriverWait(driver, WAIT_SECONDS)
    base = live_server.url
    squad = Dataset.objects.get(challenge=cast.challenge, slug="squad")
    dataset_file_put(dataset=squad, portion="train", content=TRAIN_FILE.read_bytes(), filename=TRAIN_FILE.name)

    # The public sees what exists, and no link.
    driver.get(f"{base}/c/{cast.challenge.slug}/data/")
    assert "join a team to download" in driver.find_element(By.TAG_NAME, "main").text.lower()
    assert not driver.find_elements(By.CSS_SELECTOR, "a.download")
    screenshot(driver, "data-anonymous", 1366)
    screenshot(driver, "data-anonymous", 400)

    # alice logs in and finds the Data page from the challenge page.
    driver.get(f"{base}/accounts/login/?next=/c/{cast.challenge.slug}/")
    driver.find_element(By.ID, "id_username").send_keys("alice")
    driver.find_element(By.ID, "id_password").send_keys("alice-pw")
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait.until(ec.presence_of_element_located((By.ID, "data-link")))
    screenshot(driver, "challenge-alice", 1366)
    screenshot(driver, "challenge-alice", 400)
    driver.find_element(By.ID, "data-link").click()
    wait.until(ec.presence_of_element_located((By.ID, "data-access")))
    assert "Alpha" in driver.find_element(By.ID, "data-access").text
    screenshot(driver, "data-alice", 1366)
    screenshot(driver, "data-alice", 400)

    # Download the dev files and the kit by clicking their links; check each against the page's sha256.
    rows = driver.find_elements(By.CSS_SELECTOR, 'tr.data-file[data-key^="dev/"], tr.data-file[data-key="starting-kit"]')
    assert [r.get_attribute("data-key") for r in rows] == ["dev/squad", "dev/xquad-en", "starting-kit"]
    downloaded: dict[str, bytes] = {}
    for row in rows:
        link = row.find_element(By.CSS_SELECTOR, "a.download")
        name = link.text
        shown_sha = row.find_element(By.CSS_SELECTOR, ".sha code").text
        link.click()
        downloaded[name] = wait_for_download(downloads_dir, name)
        assert hashlib.sha256(downloaded[name]).hexdigest() == shown_sha, name
    kit = downloaded.pop("demo-starting-kit.zip")
    assert sorted(downloaded) == ["demo-squad-dev.jsonl.gz", "demo-xquad-en-dev.jsonl.gz"]

    # Offline, from the downloads alone: the kit's baseline on the dev files, the kit's scoring lines.
    workdir = tmp_path / "work"
    workdir.mkdir()
    kit_dir, local = run_kit_locally(kit, downloaded, workdir)
    assert [r["line"] for r in local] == [
        "python -m scoring mrqa dev/demo-squad-dev.jsonl.gz out/squad.json",
        "python -m scoring mrqa dev/demo-xquad-en-dev.jsonl.gz out/xquad-en.json",
    ]
    by_slug = {r["line"].rsplit("/", 1)[1].removesuffix(".json"): r["result"] for r in local}
    predictions = tmp_path / "dev-predictions.zip"
    with zipfile.ZipFile(predictions, "w") as archive:
        for output in sorted((kit_dir / "out").glob("*.json")):
            archive.write(output, output.name)

    # Submit them through the upload form, as the kit's README says.
    driver.get(f"{base}/c/{cast.challenge.slug}/submit/")
    Select(driver.find_element(By.ID, "id_phase")).select_by_value(str(cast.dev.pk))
    driver.find_element(By.ID, "id_file").send_keys(str(predictions))
    driver.find_element(By.ID, "upload-submit").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "finished"))
    submission = Submission.objects.get(team=cast.alpha)
    assert submission.status == Status.FINISHED, submission.failure_reason

    shown = {
        (cells[0].text, cells[1].text): cells[2].text
        for cells in (r.find_elements(By.TAG_NAME, "td") for r in driver.find_elements(By.CSS_SELECTOR, "#scores tr"))
        if cells
    }
    for slug, label in (("squad", "SQuAD"), ("xquad-en", "XQuAD-en")):
        stored = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__slug=slug)}
        f1 = stored["f1"]
        assert f1 is not None and 0 < f1 < 100, stored  # a real baseline: neither nothing nor everything right
        assert stored["f1"] == pytest.approx(by_slug[slug]["f1"], abs=1e-9)
        assert stored["em"] == pytest.approx(by_slug[slug]["exact_match"], abs=1e-9)
        # The page names metrics by the board's labels.
        assert shown[(label, "F1")] == f"{by_slug[slug]['f1']:.2f}"
        assert shown[(label, "EM")] == f"{by_slug[slug]['exact_match']:.2f}"
    macro = Score.objects.get(submission=submission, dataset=None, metric="macro_f1").value
    assert macro == pytest.approx((by_slug["squad"]["f1"] + by_slug["xquad-en"]["f1"]) / 2, abs=1e-9)


def test_an_organizer_sees_every_file_with_its_download_count(
    cast: Cast, live_server: LiveServer, chromium: Any, downloads_dir: Path
) -> None:
    driver = chromium
    squad = Dataset.objects.get(challenge=cast.challenge, slug="squad")
    dataset_file_put(dataset=squad, portion="train", content=TRAIN_FILE.read_bytes(), filename=TRAIN_FILE.name)
    # bob fetched the XQuAD-en dev file twice before.
    bob = Client()
    bob.force_login(cast.bob)
    for _ in range(2):
        assert streamed(bob.get("/c/demo/data/dev/xquad-en/"))

    driver.get(f"{live_server.url}/accounts/login/?next=/c/demo/data/")
    driver.find_element(By.ID, "id_username").send_keys("oscar")
    driver.find_element(By.ID, "id_password").send_keys("oscar-pw")
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    WebDriverWait(driver, WAIT_SECONDS).until(ec.presence_of_element_located((By.ID, "data-access")))
    counts = {
        row.get_attribute("data-key"): [c.text for c in row.find_elements(By.CSS_SELECTOR, ".downloads .count")]
        for row in driver.find_elements(By.CSS_SELECTOR, "tr.data-file")
    }
    assert counts == {"train/squad": ["0"], "dev/squad": ["0"], "dev/xquad-en": ["2"], "test-inputs/xquad-en": ["0"],
                      "": [], "starting-kit": ["0"]}
    # A public address: the organizer reads the sealed dataset's alias, and no link to any of its files.
    hidden = driver.find_element(By.CSS_SELECTOR, 'tr.data-file[data-key=""]')
    assert hidden.text.startswith("Hidden-07") and not hidden.find_elements(By.TAG_NAME, "a")
    screenshot(driver, "data-organizer", 1366)
    screenshot(driver, "data-organizer", 400)
