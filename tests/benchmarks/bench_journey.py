"""A new participant's journey, timed: sign-up to a first board score and to a first system score.

Run against a demo started with mails written to files, so that the sign-up's link can be opened:

    READERBOARD_EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend \
    READERBOARD_EMAIL_FILE_PATH=/tmp/journey-mail PORT=8017 REDIS_PORT=6417 ./deploy/demo.sh
    .venv/bin/python -m tests.benchmarks.bench_journey --url http://127.0.0.1:8017 --mail-dir /tmp/journey-mail

Two participants, each new, on ``mrqa-demo``:

* **site**: Chromium does what a person does on the pages (sign-up form, the mailed link, login, the team
  page, the Data page's links, the upload forms), and the starting kit is followed as its README says
  (every ``bash`` block, in a fresh virtual environment: the install of the scoring library included);
* **cli**: sign-up, team and a named token on the site (the client has no sign-up), then the installed
  ``readerboard`` client: ``login``, ``download``, the kit's README, ``submit --follow`` twice.

Each step's seconds are printed; what a person spends reading is not in them (that is the point of
measuring the platform's part). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

REPO = Path(__file__).resolve().parents[2]
SLUG = "mrqa-demo"
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
PASSWORD = "a-long-journey-pw-42"


class Clock:
    def __init__(self, who: str) -> None:
        self.who, self.start, self.last = who, time.monotonic(), time.monotonic()
        self.steps: list[tuple[str, float, float]] = []  # (what, its seconds, seconds since the start)

    def step(self, what: str) -> None:
        now = time.monotonic()
        self.steps.append((what, now - self.last, now - self.start))
        print(f"  [{self.who}] {what:<58} {now - self.last:7.1f} s   (total {now - self.start:6.1f} s)", flush=True)
        self.last = now


def readme_lines(readme: str) -> list[str]:
    return [line for block in BASH_BLOCK.findall(readme) for line in block.splitlines() if line.strip()]


def run(line: str, cwd: Path, venv: Path) -> None:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", line], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    if done.returncode:
        raise SystemExit(f"the kit's line failed: {line}\n{done.stdout}\n{done.stderr}")


def kit_follow(kit_dir: Path, work: Path, clock: Clock) -> None:
    """Every bash line of the kit's README, in a fresh virtual environment (its pip install included)."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    clock.step("a fresh virtual environment")
    for line in readme_lines((kit_dir / "README.md").read_text(encoding="utf-8")):
        run(line, kit_dir, venv)
        if "pip install" in line:
            clock.step("kit: pip install -r requirements.txt (scoring wheel)")
    clock.step("kit: baseline on dev, local scores, dev-predictions.zip")


def mail_link(mail_dir: Path, address: str, since: float, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in sorted(mail_dir.glob("*"), key=lambda p: p.stat().st_mtime, reverse=True):
            if path.stat().st_mtime < since:
                break
            text = path.read_text(errors="replace")
            if address in text and (found := re.search(r"https?://\S+/accounts/confirm/\S+/", text)):
                return found.group(0)
        time.sleep(0.2)
    raise SystemExit(f"no confirmation mail to {address} in {mail_dir}")


def sign_up(driver: Any, base: str, mail_dir: Path, name: str, clock: Clock) -> None:
    wait = WebDriverWait(driver, 60)
    since = time.time() - 1
    driver.get(f"{base}/accounts/signup/")
    driver.find_element(By.ID, "id_username").send_keys(name)
    driver.find_element(By.ID, "id_email").send_keys(f"{name}@example.org")
    driver.find_element(By.ID, "id_password1").send_keys(PASSWORD)
    driver.find_element(By.ID, "id_password2").send_keys(PASSWORD)
    driver.find_element(By.ID, "signup-submit").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "We sent a link"))
    clock.step("sign-up form sent")
    driver.get(mail_link(mail_dir, f"{name}@example.org", since))
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "is confirmed"))
    clock.step("the mailed link opened: address confirmed")
    driver.get(f"{base}/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys(name)
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "header.top nav"), name))
    clock.step("logged in")
    driver.get(f"{base}/c/{SLUG}/team/")
    driver.find_element(By.ID, "id_name").send_keys(f"Team {name}")
    driver.find_element(By.ID, "create-team").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), f"You are in Team {name}"))
    clock.step("team made on the team page")


def session_of(driver: Any) -> requests.Session:
    """What the browser's own downloads would fetch: the same cookies."""
    session = requests.Session()
    for cookie in driver.get_cookies():
        session.cookies.set(cookie["name"], cookie["value"])
    return session


def site_downloads(driver: Any, base: str, work: Path, clock: Clock) -> Path:
    """The Data page's links: the starting kit and the dev files, saved where the kit's README says."""
    driver.get(f"{base}/c/{SLUG}/data/")
    links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "main a[href]")]
    session = session_of(driver)
    kit_url = next(link for link in links if link.endswith("/starting-kit.zip"))
    kit = work / "kit.zip"
    kit.write_bytes(session.get(kit_url, timeout=60).content)
    with zipfile.ZipFile(kit) as archive:
        archive.extractall(work)
    [kit_dir] = [p for p in work.iterdir() if p.name.endswith("-starting-kit")]
    for link in links:
        if "/data/dev/" in link:
            answer = session.get(link, timeout=60)
            name = re.search(r'filename="?([^";]+)', answer.headers.get("Content-Disposition", ""))
            (kit_dir / "dev" / (name.group(1) if name else link.rstrip("/").rsplit("/", 1)[1])).write_bytes(
                answer.content)
    clock.step("Data page: starting kit and dev files downloaded")
    return kit_dir


def wait_final(driver: Any, what: str, clock: Clock) -> None:
    WebDriverWait(driver, 600, poll_frequency=0.5).until(
        ec.text_to_be_present_in_element((By.ID, "status"), "finished"))
    clock.step(what)


def journey_site(base: str, mail_dir: Path, work: Path) -> Clock:
    from tests.builders.chromium import chromium_driver  # noqa: PLC0415 - the benchmark's own browser

    name = f"site{int(time.time()) % 100000}"
    clock = Clock("site")
    with chromium_driver(width=1366, height=900) as driver:
        sign_up(driver, base, mail_dir, name, clock)
        kit_dir = site_downloads(driver, base, work, clock)
        kit_follow(kit_dir, work, clock)
        driver.get(f"{base}/c/{SLUG}/submit/")
        Select(driver.find_element(By.ID, "id_phase")).select_by_visible_text(
            next(o.text for o in Select(driver.find_element(By.ID, "id_phase")).options if "Dev" in o.text))
        driver.find_element(By.ID, "id_file").send_keys(str(kit_dir / "dev-predictions.zip"))
        driver.find_element(By.ID, "upload-submit").click()
        wait_final(driver, "FIRST SCORE: dev-predictions.zip uploaded and scored", clock)
        driver.get(f"{base}/c/{SLUG}/submit/system/")
        phase = Select(driver.find_element(By.ID, "id_phase"))
        phase.select_by_visible_text(next(o.text for o in phase.options if "Dev" in o.text))
        Select(driver.find_element(By.ID, "id_kind")).select_by_value("code_bundle")
        driver.find_element(By.ID, "id_file").send_keys(str(kit_dir / "baseline-bundle.zip"))
        driver.find_element(By.ID, "system-submit").click()
        wait_final(driver, "FIRST SYSTEM SCORE: baseline-bundle.zip run and scored", clock)
    return clock


def journey_cli(base: str, mail_dir: Path, work: Path) -> Clock:
    from tests.builders.chromium import chromium_driver  # noqa: PLC0415 - the benchmark's own browser

    name = f"cli{int(time.time()) % 100000}"
    clock = Clock("cli")
    client_venv = work / "client-venv"
    subprocess.run([sys.executable, "-m", "venv", str(client_venv)], check=True)
    subprocess.run([str(client_venv / "bin" / "pip"), "install", "-q", str(REPO / "deploy" / "packages" / "client")],
                   check=True)
    clock.step("pip install ./deploy/packages/client (before the clock would start, for a person)")
    clock = Clock("cli")
    with chromium_driver(width=1366, height=900) as driver:
        sign_up(driver, base, mail_dir, name, clock)
        driver.get(f"{base}/accounts/tokens/")
        driver.find_element(By.CSS_SELECTOR, "#token-create-form input[name=name]").send_keys("laptop")
        driver.find_element(By.CSS_SELECTOR, "#token-create-form button").click()
        key = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "token-key")).text.strip()
        clock.step("a named token made on the tokens page")
    env = {**os.environ, "HOME": str(work), "PATH": f"{client_venv / 'bin'}:/usr/bin:/bin"}

    def cli(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(["readerboard", *args], cwd=work, env=env, input=stdin, capture_output=True, text=True,
                              timeout=900)
        print("    $ readerboard " + " ".join(args) + "\n      " + "\n      ".join(done.stdout.splitlines()[-6:]))
        if done.returncode:
            raise SystemExit(f"readerboard {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    cli("login", "--url", base, stdin=key + "\n")
    clock.step("readerboard login")
    cli("download", SLUG)
    [kit_dir] = [p for p in work.iterdir() if p.name.endswith("-starting-kit") and p.is_dir()]
    clock.step("readerboard download (kit and data)")
    kit_follow(kit_dir, work, clock)
    cli("submit", SLUG, "dev", str(kit_dir / "dev-predictions.zip"), "--follow", "--interval", "1")
    clock.step("FIRST SCORE: readerboard submit --follow")
    cli("submit", SLUG, "dev", str(kit_dir / "baseline-bundle.zip"), "--follow", "--interval", "1")
    clock.step("FIRST SYSTEM SCORE: readerboard submit (bundle) --follow")
    return clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--mail-dir", type=Path, required=True)
    parser.add_argument("--only", choices=("site", "cli"))
    args = parser.parse_args()
    journeys: dict[str, Callable[[str, Path, Path], Clock]] = {"site": journey_site, "cli": journey_cli}
    for name, journey in journeys.items():
        if args.only and name != args.only:
            continue
        work = Path(tempfile.mkdtemp(prefix=f"journey-{name}-"))
        try:
            print(f"== {name}")
            clock = journey(args.url.rstrip("/"), args.mail_dir, work)
            print(f"== {name}: " + "; ".join(f"{what.split(':')[0]} at {total:.1f} s" for what, _, total in clock.steps
                                             if what.startswith("FIRST")))
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
