"""Set up the demo: accounts, the three demo challenges, the MRQA 2019 board. Safe to re-run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from leaderboard.challenges.models import Phase
from leaderboard.submissions.imports import load_results_file, results_import
from leaderboard.submissions.reload import challenge_load

DEMO_DIR = Path(settings.BASE_DIR) / "deploy" / "demo"
# (password, site administrator).  The organizer's role is per challenge (the specs' ``staff``), not
# Django's staff flag: only the site administrator uses /admin/, where organizers are made.
DEMO_USERS = {
    "admin": ("admin-demo-pw", True),
    "organizer": ("organizer-demo-pw", False),
    "alice": ("alice-demo-pw", False),
    "bob": ("bob-demo-pw", False),
}


class Command(BaseCommand):
    help = "Create demo accounts and load the demo challenges with committed demo data."

    def handle(self, *args: Any, **options: Any) -> None:
        for username, (password, staff) in DEMO_USERS.items():
            # example.org addresses: the demo's console mail back end prints password resets and invitations.
            user, created = User.objects.get_or_create(
                username=username, defaults={"is_staff": staff, "email": f"{username}@example.org"}
            )
            if created:
                user.set_password(password)
                user.save()
            if (user.is_staff, user.is_superuser) != (staff, staff):
                # A database from an earlier demo made the organizer Django staff (an empty admin).
                User.objects.filter(pk=user.pk).update(is_staff=staff, is_superuser=staff)
        for spec in ("mrqa-demo.yaml", "mrc2018-demo.yaml", "mrqa2019-archive.yaml", "quac-demo.yaml",
                     "coqa-demo.yaml"):
            challenge = challenge_load(spec_path=DEMO_DIR / spec)
            self.stdout.write(f"loaded challenge {challenge.slug}")
        phase = Phase.objects.get(challenge__slug="mrqa2019", slug="test")
        archive = DEMO_DIR / "data" / "mrqa2019"
        entries = load_results_file(
            archive / "ood-test-results.json", fmt="mrqa-codalab", mapping=archive / "ood-test-mapping.yaml"
        )
        # replace: a database from an earlier demo run may hold rows under older team names.
        results_import(phase=phase, entries=entries, replace=True)
        self.stdout.write(f"imported {len(entries)} MRQA 2019 results")
        for username, (password, admin) in DEMO_USERS.items():
            role = "site administrator (/admin/)" if admin else (
                "organizer of the demo challenges (/c/mrqa-demo/console/)" if username == "organizer" else "participant")
            self.stdout.write(f"demo account {username} / {password}: {role}")
