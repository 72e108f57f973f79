"""Time a large leaderboard: the board page, its exports and the API, and count their queries.

``python -m tests.benchmarks.bench_board [--teams 1000] [--submissions 10] [--datasets 12]
[--runs 15] [--json RESULTS.json] [--keep]``

The script builds a throwaway SQLite database (the test settings put it in a fresh temporary
directory; ``READERBOARD_VAR_DIR`` points at another one), migrates it, and inserts with
``bulk_create``: one challenge whose test phase has ``--datasets`` datasets (half Split I, a third
Split II, the rest sealed Split III, as in MRQA 2019), ``--teams`` participant teams (every tenth
anonymous) plus 20 imported baselines, ``--submissions`` finished submissions per team, and their
scores: EM and F1 per dataset and the suite's macro aggregates, as ``scores_write`` stores them.
Board entries are chosen in bulk by the challenge's ranking rule ("best"); a sample of teams is
then refreshed with ``board_entry_refresh`` to check that the bulk choice is the service's.

Each endpoint is requested once to warm up, then ``--runs`` times through ``django.test.Client``;
the table shows the median and the 95th percentile (nearest rank) and the number of queries of one
request. ``board_build`` alone (the selector, no rendering) is timed too, to tell database and
Python work from template work.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import django

BASELINES = 20
SLUG = "bench"
PHASE = "test"


@dataclass
class Timing:
    name: str
    viewer: str
    median_ms: float
    p95_ms: float
    min_ms: float
    queries: int
    size_kb: float


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--submissions", type=int, default=10, help="finished submissions per team")
    parser.add_argument("--datasets", type=int, default=12)
    parser.add_argument("--runs", type=int, default=15, help="timed requests per endpoint")
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the database (its path is printed)")
    return parser.parse_args(argv)


def django_setup(var_dir: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings.test")
    os.environ["READERBOARD_VAR_DIR"] = str(var_dir)

    django.setup()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def build(args: argparse.Namespace) -> dict[str, float]:
    """Fill the database; returns how long each step took (seconds)."""
    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.core.management import call_command  # noqa: PLC0415 - after django.setup()
    from django.db import connection, transaction  # noqa: PLC0415 - after django.setup()
    from django.utils import timezone  # noqa: PLC0415 - after django.setup()

    from leaderboard.accounts.models import Membership, Role, Team, TeamKind  # noqa: PLC0415 - after django.setup()
    from leaderboard.challenges.models import Challenge, Dataset, Phase, Split, SubmissionKind  # noqa: PLC0415 - after django.setup()
    from leaderboard.challenges.suites import suite_for  # noqa: PLC0415 - after django.setup()
    from leaderboard.challenges.suites.base import SCORING_VERSION  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.board import board_entry_refresh  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.models import BoardEntry, Score, Status, Submission  # noqa: PLC0415 - after django.setup()

    steps: dict[str, float] = {}
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)
    steps["migrate"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous=OFF")  # a throwaway database: no need to wait for the disk
    with transaction.atomic():
        organizer = User.objects.create_user("organizer")
        participant = User.objects.create_user("participant")
        now = timezone.now()
        challenge = Challenge.objects.create(slug=SLUG, title="Benchmark MRQA", metric_suite="mrqa")
        challenge.staff.add(organizer)
        phase = Phase.objects.create(
            challenge=challenge, slug=PHASE, name="Test", kind="test", portion="test",
            opens_at=now - dt.timedelta(days=30), closes_at=now + dt.timedelta(days=30),
            allowed_kinds=["predictions"],
        )
        n_i, n_ii = args.datasets // 2, args.datasets // 3
        splits = [Split.I] * n_i + [Split.II] * n_ii + [Split.III] * (args.datasets - n_i - n_ii)
        datasets = Dataset.objects.bulk_create(
            Dataset(
                challenge=challenge, slug=f"ds-{i:02d}", name=f"Dataset {i:02d}", split=split, portions=["test"],
                sealed_alias=f"Hidden-{i:02d}" if split == Split.III else "", order=i,
            )
            for i, split in enumerate(splits)
        )
        teams = Team.objects.bulk_create(
            [
                Team(challenge=challenge, name=f"Team {i:04d}", affiliation=f"Lab {i % 37}",
                     is_anonymous=i % 10 == 0, join_code=f"bench-{i:06d}")
                for i in range(args.teams)
            ]
            + [
                Team(challenge=challenge, name=f"Baseline {i:02d}", kind=TeamKind.BASELINE,
                     join_code=f"bench-baseline-{i:02d}")
                for i in range(BASELINES)
            ]
        )
        Membership.objects.create(team=teams[1], user=participant, challenge=challenge, role=Role.OWNER)
    steps["challenge and teams"] = time.perf_counter() - t0

    # Submissions and their scores, in chunks so memory stays flat.
    suite = suite_for(challenge)
    t0 = time.perf_counter()
    n_scores = 0
    chunk = 200
    for start in range(0, len(teams), chunk):
        with transaction.atomic():
            subs, per_dataset_of = [], []
            for team in teams[start:start + chunk]:
                runs = 1 if team.kind == TeamKind.BASELINE else args.submissions
                skill = rng.uniform(30, 85)
                for _ in range(runs):
                    per_dataset = {}
                    for ds in datasets:
                        f1 = max(0.0, min(100.0, rng.gauss(skill, 6)))
                        per_dataset[ds] = {"f1": f1, "em": max(0.0, f1 - rng.uniform(5, 15))}
                    aggregates = suite.aggregate(per_dataset)
                    per_dataset_of.append((per_dataset, aggregates))
                    subs.append(Submission(
                        team=team, phase=phase, status=Status.FINISHED,
                        kind=SubmissionKind.IMPORTED if team.kind == TeamKind.BASELINE else SubmissionKind.PREDICTIONS,
                        primary_score=aggregates[suite.primary_metric], scoring_version=SCORING_VERSION,
                        finished_at=now,
                    ))
            subs = Submission.objects.bulk_create(subs)
            scores = [
                Score(submission=sub, dataset=ds, metric=metric, value=value)
                for sub, (per_dataset, _) in zip(subs, per_dataset_of)
                for ds, metrics in per_dataset.items()
                for metric, value in metrics.items()
            ]
            scores += [
                Score(submission=sub, dataset=None, metric=metric, value=value)
                for sub, (_, aggregates) in zip(subs, per_dataset_of)
                for metric, value in aggregates.items()
            ]
            Score.objects.bulk_create(scores, batch_size=5000)
            n_scores += len(scores)
    steps["submissions and scores"] = time.perf_counter() - t0

    # Board entries, chosen in bulk by the "best" rule: highest primary score, then earliest.
    t0 = time.perf_counter()
    best: dict[int, tuple[float, Any, int]] = {}
    for team_id, sub_id, score, created in Submission.objects.filter(phase=phase).values_list(
        "team_id", "id", "primary_score", "created_at"
    ):
        assert score is not None  # every generated submission is scored
        mine = (-score, created, sub_id)
        if team_id not in best or mine < best[team_id]:
            best[team_id] = mine
    BoardEntry.objects.bulk_create(
        BoardEntry(phase=phase, team_id=team_id, submission_id=sub_id) for team_id, (_, _, sub_id) in best.items()
    )
    steps["board entries"] = time.perf_counter() - t0
    for team in rng.sample(teams, 5):  # the service agrees with the bulk choice
        before = BoardEntry.objects.get(phase=phase, team=team).submission_id
        entry = board_entry_refresh(team=team, phase=phase)
        assert entry is not None and entry.submission_id == before, (team, before, entry)
    steps["rows"] = float(n_scores)
    return steps


def measure(args: argparse.Namespace) -> list[Timing]:
    from django.contrib.auth.models import AnonymousUser, User  # noqa: PLC0415 - after django.setup()
    from django.db import connection  # noqa: PLC0415 - after django.setup()
    from django.test import Client  # noqa: PLC0415 - after django.setup()
    from django.test.utils import CaptureQueriesContext  # noqa: PLC0415 - after django.setup()
    from django.urls import reverse  # noqa: PLC0415 - after django.setup()

    from leaderboard.challenges.models import Phase  # noqa: PLC0415 - after django.setup()
    from leaderboard.rankings.selectors import ORGANIZER, board_build  # noqa: PLC0415 - after django.setup()

    def client(who: str | None) -> Client:
        c = Client()
        if who:
            c.force_login(User.objects.get(username=who))
        return c

    def timed(name: str, viewer: str, fn: Callable[[], Any]) -> Timing:
        size = fn()  # warm up
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
        with CaptureQueriesContext(connection) as ctx:
            fn()
        return Timing(name, viewer, statistics.median(times), p95(times), min(times), len(ctx.captured_queries),
                      size / 1024 if isinstance(size, int) else 0.0)

    def get(c: Client, url: str) -> Callable[[], int]:
        def fn() -> int:
            response = c.get(url)
            assert response.status_code == 200, (url, response.status_code)
            return len(response.content)
        return fn

    kwargs = {"slug": SLUG, "phase_slug": PHASE}
    public, participant, organizer = client(None), client("participant"), client("organizer")
    phase = Phase.objects.select_related("challenge").get(challenge__slug=SLUG, slug=PHASE)
    org_user = User.objects.get(username="organizer")
    results = [
        timed("board_build (selector)", "public", lambda: board_build(phase=phase, viewer=AnonymousUser()) and 0),
        timed("board_build (selector)", "organizer",
              lambda: board_build(phase=phase, viewer=org_user, view=ORGANIZER) and 0),
        timed("board page", "public", get(public, reverse("board", kwargs=kwargs))),
        timed("board page", "participant", get(participant, reverse("board", kwargs=kwargs))),
        timed("board page", "organizer", get(organizer, reverse("board-organizer", kwargs=kwargs))),
        timed("JSON export", "public", get(public, reverse("board-json", kwargs=kwargs))),
        timed("CSV export", "public", get(public, reverse("board-csv", kwargs=kwargs))),
        timed("API leaderboard", "public", get(public, reverse("api-leaderboard", kwargs=kwargs))),
        timed("chart.svg", "public", get(public, reverse("board-chart", kwargs=kwargs))),
    ]
    return results


def format_table(results: list[Timing]) -> str:
    lines = [f"{'endpoint':<24} {'viewer':<12} {'median ms':>10} {'p95 ms':>9} {'min ms':>8} {'queries':>8} {'KiB':>8}"]
    for r in results:
        lines.append(
            f"{r.name:<24} {r.viewer:<12} {r.median_ms:>10.1f} {r.p95_ms:>9.1f} {r.min_ms:>8.1f} {r.queries:>8} "
            f"{r.size_kb:>8.0f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    var_dir = Path(tempfile.mkdtemp(prefix="bench_board_"))
    django_setup(var_dir)
    from django.conf import settings  # noqa: PLC0415 - after django.setup()

    db_dir = Path(settings.DATABASES["default"]["NAME"]).parent
    try:
        t0 = time.perf_counter()
        steps = build(args)
        setup_s = time.perf_counter() - t0
        n_scores = int(steps.pop("rows"))
        print(f"{args.teams} teams + {BASELINES} baselines, {args.submissions} submissions each, "
              f"{args.datasets} datasets, {n_scores:,} scores")
        print("setup: " + ", ".join(f"{k} {v:.1f}s" for k, v in steps.items()) + f"; total {setup_s:.1f}s")
        results = measure(args)
        print(format_table(results))
        print(f"\n{args.runs} timed runs after one warm-up; p95 = nearest rank; queries of one request")
        if args.json is not None:
            report = {
                "teams": args.teams, "baselines": BASELINES, "submissions": args.submissions,
                "datasets": args.datasets, "scores": n_scores, "runs": args.runs, "setup_s": setup_s,
                "setup_steps_s": steps, "python": sys.version.split()[0], "machine": platform.platform(),
                "results": [asdict(r) for r in results],
            }
            args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    finally:
        if args.keep:
            print(f"database kept: {settings.DATABASES['default']['NAME']}")
        else:
            from django.db import connections  # noqa: PLC0415 - after django.setup()

            connections.close_all()
            shutil.rmtree(db_dir, ignore_errors=True)
        shutil.rmtree(var_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
