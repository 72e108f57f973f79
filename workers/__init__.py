"""Evaluation workers: Celery tasks and the sandboxed runner.

Every module here uses the Django ORM through leaderboard's services, so Django
is set up as soon as the package is imported, whichever module comes first.
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings.dev")
django.setup()
