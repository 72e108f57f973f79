"""What the trusted side costs per turn of the interactive protocol (issue 11).

``python -m tests.benchmarks.bench_dialog_turns [--dialogs 100] [--modes gold,own] [--json OUT]``

In a run in the interactive protocol every answer goes from the compute worker to
``/internal/v1/runs/<id>/<attempt>/dialogs/``, which checks the worker's token and the run, takes the
dialog's row lock, stores the answer and replies with the gold the mode reveals (one call per turn in
the modes that reveal gold; one per dialog in the others, as ``workers.run_system.RemoteGold`` sends
them).  This drives that endpoint in-process (Django's test client: the whole middleware stack, no socket) on a throwaway test
database of the test settings, over the dialogs of the QuAC demo excerpt repeated ``--dialogs`` times
(41 questions per 5 dialogs), every turn of every dialog in order, as a worker plays them.  Reported
per mode: the calls, their median and p95 milliseconds, and the whole mode's milliseconds per turn
(wall clock, and this process's CPU time);
and a heartbeat's (the same request path with no turn in it: what any internal call costs).  Loopback HTTP adds its own
round trip on top (a compute worker on another host: the network's).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

import django
import yaml

from scoring.dialogs import quac_protocol_dialogs

REPO = Path(__file__).resolve().parents[2]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialogs", type=int, default=100, help="dialogs in the gold (the excerpt's, repeated)")
    parser.add_argument("--modes", default="gold,own")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    modes = args.modes.split(",")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings.test")

    django.setup()
    from django.db import connection  # noqa: PLC0415 - after django.setup()
    from django.test.utils import setup_test_environment  # noqa: PLC0415 - after django.setup()

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0)
    try:
        figures = _measure(args.dialogs, modes)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


def _measure(n_dialogs: int, modes: list[str]) -> dict[str, object]:
    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: PLC0415 - after django.setup()
    from django.db import connection  # noqa: PLC0415 - after django.setup()
    from django.test import Client  # noqa: PLC0415 - after django.setup()

    from leaderboard.accounts.services import team_create  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.intake import submission_create_system  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.models import DialogAnswers  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.reload import challenge_load  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.worker_api import worker_token_create  # noqa: PLC0415 - after django.setup()

    excerpt = json.loads((REPO / "deploy/demo/data/quac/quac-test.json").read_text())
    articles = excerpt["data"]
    data = []
    for k in range(n_dialogs):
        article = json.loads(json.dumps(articles[k % len(articles)]))
        for paragraph in article["paragraphs"]:
            paragraph["id"] = f"{paragraph['id']}-{k}"
            for qa in paragraph["qas"]:
                qa["id"] = f"{qa['id']}-{k}"
        data.append(article)
    gold = {"data": data}
    dialogs = quac_protocol_dialogs(gold)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "val.json"
        path.write_text(json.dumps(gold))
        spec = {"slug": "bench", "title": "Bench", "metric_suite": "quac",
                "phases": [{"slug": "test", "name": "Test", "kind": "test", "opens_at": "2020-01-01T00:00:00Z",
                            "closes_at": "2099-01-01T00:00:00Z", "allowed_kinds": ["code_bundle"], "protocol": modes}],
                "datasets": [{"slug": "quac", "name": "QuAC", "split": "II", "files": {"test": str(path)}}]}
        (Path(tmp) / "bench.yaml").write_text(yaml.safe_dump(spec))
        phase = challenge_load(spec_path=Path(tmp) / "bench.yaml").phases.get()
        user = User.objects.create_user("bench")
        team = team_create(challenge=phase.challenge, owner=user, name="Bench")
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("run.py", "")
            archive.writestr("readerboard.json", '{"protocol": "interactive"}')
        submission_create_system(team=team, phase=phase, user=user, kind="code_bundle",
                                 upload=SimpleUploadedFile("s.zip", buffer.getvalue()))
        client = Client(HTTP_AUTHORIZATION=f"Bearer {worker_token_create(name='bench')}")
        ticket = client.post("/internal/v1/runs/claim/", {"queue": "cpu", "hint": 0, "instance": "b:1"},
                             content_type="application/json").json()["ticket"]
        url = f"/internal/v1/runs/{ticket['submission_id']}/{ticket['attempt']}/dialogs/"
        out: dict[str, object] = {"dialogs": len(dialogs), "turns_per_mode": sum(len(d.turns) for d in dialogs),
                                  "database": connection.vendor}
        # The same request path without a turn (auth, the run's check, middleware): what every
        # internal call costs, for comparison.
        beats = []
        for _ in range(300):
            started = time.perf_counter()
            client.post(url.replace("/dialogs/", "/heartbeat/"))
            beats.append((time.perf_counter() - started) * 1000)
        beats.sort()
        out["heartbeat"] = {"median_ms": round(statistics.median(beats), 3), "p95_ms": round(beats[int(0.95 * 300)], 3)}
        answer = {"answer": "CANNOTANSWER", "yesno": "x", "followup": "n"}
        for mode in modes:
            # As workers.run_system.RemoteGold plays it: a call per turn where the mode reveals gold
            # (gold, adversarial; and an opening call per dialog in the adversarial mode), a call per
            # dialog where it reveals nothing (own, single).
            per_turn = mode in ("gold", "adversarial")
            calls = []
            began, began_cpu = time.perf_counter(), time.process_time()
            for index, dialog in enumerate(dialogs):
                if mode == "adversarial":
                    client.post(url, {"mode": mode, "dataset": 0, "dialog": index, "turn": None},
                                content_type="application/json")
                batches = [[t] for t in range(len(dialog.turns))] if per_turn else [list(range(len(dialog.turns)))]
                for batch in batches:
                    started = time.perf_counter()
                    response = client.post(url, {"mode": mode, "dataset": 0, "dialog": index, "turn": batch[0],
                                                 "answers": [answer] * len(batch), "latencies_ms": [1.0] * len(batch)},
                                           content_type="application/json")
                    calls.append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200, response.content
            total_ms = (time.perf_counter() - began) * 1000
            # This process's CPU time only (the test client runs the whole stack in it): what other
            # processes on a shared machine do to the wall-clock figures does not count here.
            cpu_ms = (time.process_time() - began_cpu) * 1000
            turns = sum(len(d.turns) for d in dialogs)
            # Every answer stored, one per turn (a path that answered without writing would be quick).
            stored = sum(len(a) for a in DialogAnswers.objects.filter(
                submission_id=ticket["submission_id"], mode=mode).values_list("answers", flat=True))
            assert stored == turns, f"{mode}: {stored} answers stored of {turns}"
            calls.sort()
            out[mode] = {"calls": len(calls), "call_median_ms": round(statistics.median(calls), 3),
                         "call_p95_ms": round(calls[int(0.95 * len(calls))], 3),
                         "ms_per_turn": round(total_ms / turns, 3),
                         "cpu_ms_per_turn": round(cpu_ms / turns, 3), "turns": turns}
        return out


if __name__ == "__main__":
    sys.exit(main())
