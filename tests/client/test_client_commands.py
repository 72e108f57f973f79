"""The participants' client without a platform: its command line, what it prints, its login file, and how
it says each failure (one line, exit status 1), against a stand-in HTTP server in a thread.

The installed client against a real server is tests/processes/test_client_installed.py.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import stat
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from leaderboard.client.cli import (
    Context,
    board_table,
    follow_until_final,
    kind_guess,
    main,
    parser_build,
    status_text,
)
from leaderboard.client.credentials import config_path, login_load, login_save, url_clean
from leaderboard.client.errors import ClientError, NotLoggedIn, Refused
from leaderboard.client.remote import MultipartBody, Remote
from leaderboard.client.terminal import limits_text, moment, phase_state, quota_text, size_text

# --- the command line -----------------------------------------------------------------------------------


def test_each_command_takes_its_arguments() -> None:
    parser = parser_build()
    args = parser.parse_args(["submit", "mrqa-demo", "dev", "preds.zip", "--kind", "code_bundle", "--follow"])
    assert (args.slug, args.phase, args.file, args.kind, args.follow, args.interval) == (
        "mrqa-demo", "dev", "preds.zip", "code_bundle", True, 3.0)
    assert parser.parse_args(["follow", "42", "--timeout", "60"]).timeout == 60.0
    assert parser.parse_args(["board", "demo", "test", "--json"]).json
    assert parser.parse_args(["download", "demo"]).dir == "."
    assert parser.parse_args(["challenges"]).slug is None


@pytest.mark.parametrize("argv", [[], ["submit", "demo", "dev"], ["submit", "demo", "dev", "f", "--kind", "movie"],
                                  ["status", "forty-two"], ["no-such-command"]])
def test_a_wrong_command_line_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv, env={})
    assert exit_.value.code == 2
    assert "usage: readerboard" in capsys.readouterr().err


def test_the_kind_of_a_file_is_read_from_the_file(tmp_path: Path) -> None:
    bundle, predictions = tmp_path / "system.zip", tmp_path / "dev-predictions.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("run.py", "print('hi')\n")
    with zipfile.ZipFile(predictions, "w") as archive:
        archive.writestr("squad.json", "{}")
    (tmp_path / "preds.json").write_text("{}")
    (tmp_path / "image.tar.gz").write_bytes(b"")
    assert kind_guess(bundle) == "code_bundle"
    assert kind_guess(predictions) == "predictions"
    assert kind_guess(tmp_path / "preds.json") == "predictions"
    assert kind_guess(tmp_path / "image.tar.gz") == "docker_image"


# --- what it prints -------------------------------------------------------------------------------------


def test_moments_are_shown_in_utc_and_sizes_in_binary_units() -> None:
    assert moment("2030-12-31T23:59:59Z") == "2030-12-31 23:59"
    assert moment("2026-06-01T02:30:00+02:00") == "2026-06-01 00:30"
    assert moment("2026-06-01T00:30:05.123456+00:00", seconds=True) == "2026-06-01 00:30:05"
    assert moment(None) == "-"
    assert (size_text(6), size_text(13_619), size_text(5 * 1024**3)) == ("6 B", "13.3 KiB", "5.0 GiB")


def test_quota_left_says_what_the_team_may_still_submit() -> None:
    quota = {"per_day": 20, "total": 500, "left_today": 19, "left_total": 499, "active": 1, "concurrent": 3}
    assert quota_text(quota) == "19 of 20 today, 499 of 500 in all (1 of 3 being evaluated)"
    assert quota_text({"per_day": None, "total": None, "active": 0}) == "no limit"
    assert quota_text(None) == "-"
    assert limits_text({"per_day": 2, "total": 10, "concurrent": 1}) == "2 a day, 10 in all"
    assert limits_text({"per_day": None, "total": None}) == "no limit"


def test_a_phase_is_open_closed_or_not_open_yet_and_an_extension_counts() -> None:
    now = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
    phase = {"opens_at": "2026-01-01T00:00:00Z", "closes_at": "2026-12-31T00:00:00Z", "your_quota": None}
    assert phase_state(phase, now) == "closed"
    assert phase_state({**phase, "your_quota": {"closes_at": "2027-02-01T00:00:00Z"}}, now) == "open"
    assert phase_state({**phase, "opens_at": "2027-06-01T00:00:00Z", "closes_at": "2028-01-01T00:00:00Z"},
                       now) == "not open yet"


BOARD: dict[str, Any] = {
    "challenge": "demo", "phase": "dev", "ranking_note": "Ranked by Macro F1; equal scores share a rank.",
    "withheld": {"Split III F1": "withheld while a dataset is sealed"},
    "rows": [
        {"rank": 1, "team": "Alpha", "affiliation": "", "baseline": False, "status": "finished", "excluded": "",
         "coverage": None, "submitted_at": "2026-12-02T18:47:11+00:00", "Macro F1": 87.123, "SQuAD F1": 90.0,
         "XQuAD-en F1": None, "ci95_low": 80.0, "ci95_high": 91.5, "p_vs_leader": None, "rank_group": 1,
         "rank_low": 1, "rank_high": 1, "significance_note": ""},
        {"rank": 2, "team": "Overlap", "affiliation": "", "baseline": True, "status": "finished", "excluded": "",
         "coverage": "1 of 2 datasets", "submitted_at": None, "Macro F1": 23.5, "SQuAD F1": 36.0,
         "XQuAD-en F1": 11.0, "ci95_low": None, "ci95_high": None, "p_vs_leader": 0.001, "rank_group": 2,
         "rank_low": 2, "rank_high": 2, "significance_note": ""},
    ],
}


def test_the_board_is_a_table_of_its_score_columns_in_the_apis_order() -> None:
    text = board_table(BOARD, width=None)
    lines = text.splitlines()
    assert lines[0] == "demo / dev: Ranked by Macro F1; equal scores share a rank."
    assert lines[1].split() == ["rank", "team", "submitted", "(UTC)", "Macro", "F1", "SQuAD", "F1", "XQuAD-en", "F1",
                                "95%", "CI"]
    assert lines[2].split() == ["1", "Alpha", "2026-12-02", "18:47", "87.12", "90.00", "-", "80.00-91.50"]
    assert "Overlap (baseline) [1 of 2 datasets]" in lines[3] and lines[3].split()[-4:] == ["23.50", "36.00", "11.00", "-"]
    assert lines[-1] == "Split III F1: withheld while a dataset is sealed"
    # A narrow terminal keeps rank, team, date and the first score, and says what it left out.
    narrow = board_table(BOARD, width=60).splitlines()
    assert narrow[1].split()[-2:] == ["Macro", "F1"]
    assert narrow[4].startswith("(3 more columns: SQuAD F1, XQuAD-en F1, 95% CI; --wide")
    assert board_table({**BOARD, "rows": []}, width=None).endswith("No ranked submission yet.")


def test_a_submission_shows_its_queue_position_scores_and_reason() -> None:
    queued = {"id": 7, "kind": "code_bundle", "phase": "test", "team": "Alpha", "status": "queued",
              "queue_position": 3, "created_at": "2026-12-02T18:00:00Z", "scores": [], "verdict": ""}
    assert "status: queued, position 3 in the queue" in status_text(queued)
    failed = {**queued, "status": "failed", "queue_position": None, "verdict": "timed_out",
              "failure_reason": "timed out after 300 s", "started_at": "2026-12-02T18:00:05Z",
              "finished_at": "2026-12-02T18:05:05Z", "run_seconds": 300.0, "peak_memory_mb": 40, "exit": "killed"}
    text = status_text(failed)
    assert "status: failed (timed_out)" in text and "reason: timed out after 300 s" in text
    assert "submitted 2026-12-02 18:00:00, started 18:00:05, finished 18:05:05 (UTC)" in text
    assert "run: 300 s, peak memory 40 MB, exit killed" in text
    assert "run: 0.57 s" in status_text({**failed, "run_seconds": 0.56907})
    scored = {**queued, "status": "finished", "queue_position": None, "primary_score": 23.514,
              "scores": [{"dataset": "SQuAD", "metric": "f1", "label": "F1", "value": 35.97, "sealed": False},
                         {"dataset": "Hidden-07", "metric": "f1", "label": "F1", "value": None, "sealed": True}]}
    text = status_text(scored)
    assert "    SQuAD      F1       35.97\n    Hidden-07  F1      sealed\n" in text
    assert "ranking score: 23.51" in text


# --- the login file -------------------------------------------------------------------------------------


def test_the_login_is_saved_for_its_owner_only_and_the_environment_overrides_it(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    path = login_save(url="https://rb.example.org", token="k" * 40, token_name="laptop", env=env)
    assert path == tmp_path / ".config" / "readerboard" / "config.json" == config_path(env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"url": "https://rb.example.org", "token": "k" * 40, "token_name": "laptop"}
    login = login_load(env)
    assert (login.url, login.token, login.token_from) == ("https://rb.example.org", "k" * 40, str(path))
    login = login_load({**env, "READERBOARD_TOKEN": "other", "READERBOARD_URL": "http://127.0.0.1:8000/"})
    assert (login.url, login.token, login.token_from) == ("http://127.0.0.1:8000", "other", "READERBOARD_TOKEN")
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path / "x")}) == tmp_path / "x" / "readerboard" / "config.json"


def test_without_a_login_the_client_says_how_to_log_in(tmp_path: Path) -> None:
    with pytest.raises(NotLoggedIn, match=r"readerboard login --url"):
        login_load({"HOME": str(tmp_path)})
    with pytest.raises(NotLoggedIn, match=r"not logged in"):
        login_load({"HOME": str(tmp_path), "READERBOARD_URL": "http://127.0.0.1:1"})
    assert login_load({"HOME": str(tmp_path), "READERBOARD_URL": "http://h"}, need_token=False).token == ""
    for wrong in ("127.0.0.1:8000", "ftp://h", "https://h/?x=1"):
        with pytest.raises(ClientError, match="server URL"):
            url_clean(wrong)


# --- failures, in one line ------------------------------------------------------------------------------


class _Stand(BaseHTTPRequestHandler):
    """Answers by path: what a server says in each case the client must put in words."""

    uploads: list[tuple[str, bytes]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.headers.get("Authorization") != "Token good":
            self._answer(401, {"detail": "Invalid token."})
        elif self.path == "/api/v1/submissions/1/":
            self._answer(500, b"<h1>Server Error</h1>")
        elif self.path == "/api/v1/submissions/3/":
            self._answer(302, b"", {"Location": "https://elsewhere.invalid/api/v1/submissions/3/"})
        elif self.path == "/api/v1/submissions/2/":
            self._answer(429, {"detail": "slow down"}, {"Retry-After": "30"})
        else:
            self._answer(404, {"detail": "Not found."})

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).uploads.append((self.headers["Content-Type"], body))
        self._answer(400, {"detail": "preds.json [squad]: 2 question(s) have no prediction\n"
                                     "preds.json [quac]:   1 id(s) are not questions of this dataset"})


@pytest.fixture
def stand_in() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stand)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _run(argv: list[str], env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(argv, out=out, env=env)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.mark.parametrize(("argv", "token", "said"), [
    (["status", "5"], "bad", "readerboard: the server refused the API token (Invalid token; the token from "
                             "READERBOARD_TOKEN): make one on {url}/accounts/tokens/ and run `readerboard login`"),
    (["status", "5"], "good", "readerboard: no submission 5 of your team's on {url}"),
    (["status", "1"], "good", "readerboard: the server failed on /api/v1/submissions/1/ (HTTP 500); try again "
                              "later, or tell the organizers"),
    (["status", "2"], "good", "readerboard: slow down (try again in 30 s)"),
    # The token is not carried on to another host: the redirect is said, not followed.
    (["status", "3"], "good", "readerboard: the server sends /api/v1/submissions/3/ on to "
                              "https://elsewhere.invalid/api/v1/submissions/3/: if the site moved (to https://, say), "
                              "run `readerboard login --url` with its address"),
    (["log", "5"], "good", "readerboard: no submission 5 of your team's on {url}"),
])
def test_each_failure_is_one_line_and_exit_status_1(stand_in: str, argv: list[str], token: str, said: str,
                                                    capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "READERBOARD_URL": stand_in, "READERBOARD_TOKEN": token}
    code, out, err = _run(argv, env, capsys)
    assert code == 1 and out == ""
    assert err == said.format(url=stand_in) + "\n"


def test_a_server_that_is_down_and_a_missing_file_are_said_so(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "READERBOARD_URL": "http://127.0.0.1:1", "READERBOARD_TOKEN": "good"}
    assert _run(["status", "5"], env, capsys)[::2] == (
        1, "readerboard: cannot reach the server at http://127.0.0.1:1: Connection refused\n")
    assert _run(["submit", "demo", "dev", str(tmp_path / "nope.json")], env, capsys)[::2] == (
        1, f"readerboard: no such file: {tmp_path / 'nope.json'}\n")
    assert _run(["status", "5"], {"HOME": str(tmp_path)}, capsys)[::2] == (
        1, "readerboard: no server known: run `readerboard login --url https://...` (or set READERBOARD_URL)\n")


def test_an_upload_is_one_multipart_form_streamed_and_a_refusal_gives_the_servers_words(stand_in: str,
                                                                                        tmp_path: Path) -> None:
    file = tmp_path / "preds.json"
    file.write_bytes(b"{oops" * 100_000)
    body = MultipartBody({"phase": "dev", "kind": "code_bundle"}, "file", file, 'my "preds".json')
    whole = body.read()
    assert len(whole) == body.length and body.read() == b""
    assert whole.count(b"{oops") == 100_000 and b'filename="my _preds_.json"' in whole
    _Stand.uploads.clear()
    with pytest.raises(ClientError) as refused:
        Remote(stand_in, "good").post_file("/api/v1/challenges/demo/submissions/", fields={"phase": "dev"}, file=file)
    assert str(refused.value) == ("refused by the server (HTTP 400): preds.json [squad]: 2 question(s) have no "
                                  "prediction; preds.json [quac]: 1 id(s) are not questions of this dataset")
    [(content_type, sent)] = _Stand.uploads
    boundary = content_type.split("boundary=", 1)[1]
    assert sent.startswith(f'--{boundary}\r\nContent-Disposition: form-data; name="phase"\r\n\r\ndev\r\n'.encode())
    assert sent.endswith(f"\r\n--{boundary}--\r\n".encode()) and sent.count(b"{oops") == 100_000


class _Scripted(Remote):
    """A server whose answers to a submission's address are played in order (an exception is raised)."""

    def __init__(self, answers: list[Any]) -> None:
        super().__init__("http://rb.invalid", "good")
        self.answers = answers

    def get(self, path: str) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _sub(status: str, **more: Any) -> dict[str, Any]:
    return {"id": 9, "kind": "predictions", "phase": "dev", "team": "Alpha", "status": status, "scores": [],
            "created_at": "2026-12-02T18:00:00Z", **more}


def test_follow_prints_each_change_waits_out_a_restart_and_ends_with_the_scores() -> None:
    out = io.StringIO()
    slept: list[float] = []
    remote = _Scripted([_sub("queued", queue_position=2), _sub("queued", queue_position=2),
                        _sub("queued", queue_position=1), ClientError("cannot reach the server at x: refused"),
                        _sub("scoring"), _sub("finished", primary_score=87.5)])
    assert follow_until_final(Context(out=out, env={}), remote, 9, interval=0.5, sleep=slept.append) == 0
    lines = [line.split(" ", 1)[1] for line in out.getvalue().splitlines()[:4]]
    assert lines == ["queued, position 2 in the queue", "queued, position 1 in the queue",
                     "cannot reach the server at x: refused; trying again for 60 s", "scoring"]
    assert "ranking score: 87.50" in out.getvalue() and slept == [0.5] * 5


def test_follow_of_a_failed_submission_says_why_and_exits_non_zero() -> None:
    remote = _Scripted([_sub("failed", failure_reason="squad.json: not valid JSON")])
    with pytest.raises(ClientError, match=r"^submission 9 failed: squad.json: not valid JSON$"):
        follow_until_final(Context(out=io.StringIO(), env={}), remote, 9, interval=0.5, sleep=lambda s: None)
    refused = _Scripted([Refused("refused the API token", status=401)])
    with pytest.raises(Refused):  # a refusal is not waited out
        follow_until_final(Context(out=io.StringIO(), env={}), refused, 9, interval=0.5, sleep=lambda s: None)
