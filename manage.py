#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import sys

from django.core.management import execute_from_command_line

from leaderboard.settings.choice import settings_module_set


def main() -> None:
    # Settings are read lazily, on first use: choosing them here is early enough.
    settings_module_set()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
