#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys

from django.core.management import execute_from_command_line


def main() -> None:
    # Settings are read lazily, on first use: choosing them here is early enough.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings.dev")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
