"""Machine reading comprehension metrics, identical to the official scripts; no Django, no platform.

Installable on its own (``deploy/packages/scoring``); ``python -m scoring --help`` lists the commands.
"""

# The one version of everything this repository ships (the platform, this library, the participants'
# client): calendar versioning, YEAR.MONTH.N. The distributions read it from here when they are built.
__version__ = "2026.12.0"
