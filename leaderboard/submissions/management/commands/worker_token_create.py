"""``manage.py worker_token_create NAME [--queue Q ...]``: a compute worker's token for the internal API.

With ``--queue`` the worker may claim runs of those queues only (a host an organizer attaches for
its own queue); without, runs of any queue (the platform's own workers).

Prints the token alone on stdout, once (only its sha256 is kept); a new token for the same name
replaces the old one, which stops working at once.  Give it to the worker as READERBOARD_WORKER_TOKEN.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.text import slugify

from leaderboard.submissions.worker_api import worker_token_create


class Command(BaseCommand):
    help = "Make (or replace) the internal-API token of the compute worker NAME and print it once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the worker's name: letters, digits, - and _ (e.g. gpu-host-1)")
        parser.add_argument("--queue", action="append", default=[], dest="queues",
                            help="a run queue it may claim from (repeat for several; default: any)")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["name"]
        if slugify(name) != name or not name:
            raise CommandError(f"a worker name is letters, digits, - and _ only, not {name!r}")
        self.stdout.write(worker_token_create(name=name, queues=options["queues"]))
