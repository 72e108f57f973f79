"""deploy/postgres.sh, as deploy/test.sh calls it: `url=$(bash deploy/postgres.sh)`.

Both ways it once broke CI happen only when the script starts the cluster, so the test starts it from
the state a machine restored from a snapshot is in: cluster down, a stale postmaster.pid left behind.
  - pg_ctlcluster printed "Removed stale pid file." on stdout, in front of the URL;
  - the server it starts inherited the descriptor of the caller's $(...) pipe and held it open, so
    the command substitution never returned (CI ran out of time waiting).
It does so on a cluster of its own (READERBOARD_PG_CLUSTER), made by the script and dropped after: it
once stopped the suite's own cluster, and with it a PostgreSQL pass running beside it on the machine
("terminating connection due to administrator command").  In the Postgres pass it also runs the script
on the suite's cluster as it finds it (online), without stopping it.  Both passes run it (marked
``database``: it opens no connection, but its subject is the database server); deploy/test.sh wants
the same outcome from both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

REPO = Path(__file__).resolve().parent.parent
CLUSTER = "readerboard"
PREFIX = "rbtest"  # + the pid of the test run that made it

pytestmark = pytest.mark.database


def cluster_row(name: str = CLUSTER) -> list[str] | None:
    listing = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in listing.splitlines()]
    return next((row for row in rows if len(row) > 3 and row[1] == name), None)


def run_script(cluster: str = CLUSTER) -> str:
    """What `url=$(bash deploy/postgres.sh)` leaves in url; fails the test when the call hangs or fails."""
    try:
        # The same shape as deploy/test.sh: stdout is a pipe read to its end.
        done = subprocess.run(["bash", "-c", 'url=$(bash deploy/postgres.sh 2>/dev/null); printf %s "$url"'],
                              cwd=REPO, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "READERBOARD_PG_CLUSTER": cluster})
    except subprocess.TimeoutExpired:
        pytest.fail("`url=$(bash deploy/postgres.sh)` did not return: something it started holds the pipe")
    assert done.returncode == 0, done.stderr
    return done.stdout


def url_of(port: str) -> str:
    return f"postgres://readerboard:readerboard-test-only@127.0.0.1:{port}/readerboard"


@pytest.fixture
def own_cluster() -> Iterator[str]:
    """A cluster name no other run uses; the cluster the script makes under it is dropped after, and so
    are those a killed run of this test left behind (their pid is gone), as postgres.sh does with test
    databases."""
    listing = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=True).stdout
    for version, left, *_ in (line.split() for line in listing.splitlines()):
        if left.startswith(PREFIX) and left[len(PREFIX):].isdigit() and not _alive(int(left[len(PREFIX):])):
            subprocess.run(["pg_dropcluster", "--stop", version, left], check=True, capture_output=True)
    name = f"{PREFIX}{os.getpid()}"
    yield name
    row = cluster_row(name)
    if row is not None:
        subprocess.run(["pg_dropcluster", "--stop", row[0], name], check=True, capture_output=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(shutil.which("pg_lsclusters") is None, reason="PostgreSQL is not installed here")
def test_the_script_prints_only_the_url_and_returns_after_starting_a_cluster_left_unclean(own_cluster: str) -> None:
    # A fresh machine: no such cluster yet.  The script makes it, starts it and prints its URL.
    assert cluster_row(own_cluster) is None
    made = run_script(own_cluster)
    row = cluster_row(own_cluster)
    assert row is not None and row[3] == "online", made
    version, _, port, _, _, data = row[:6]
    assert made == url_of(port)

    # What an unclean shutdown leaves: the cluster down, a pid file naming a process that is not a postmaster.
    subprocess.run(["pg_ctlcluster", version, own_cluster, "stop"], check=True, capture_output=True)
    pid_file = Path(data) / "postmaster.pid"
    pid_file.write_text(f"999999\n{data}\n0\n{port}\n")
    shutil.chown(pid_file, "postgres", "postgres")
    assert run_script(own_cluster) == url_of(port)
    row = cluster_row(own_cluster)
    assert row is not None and row[3] == "online"

    if connection.vendor == "postgresql":
        # The suite's own cluster, as this pass finds it (online: its database is in it): left running.
        suite = cluster_row()
        assert suite is not None and run_script() == url_of(suite[2])
        row = cluster_row()
        assert row is not None and row[3] == "online"
