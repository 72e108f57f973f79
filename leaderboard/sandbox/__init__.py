"""What the platform and its compute workers share about a system's run, without Django.

Not an installed app: ``contract`` (settings, limits, plan, ticket, outcome), ``archives`` (checks of
uploaded images and bundles, and of a run's outputs) and ``answers_json`` (the one reader of prediction
JSON and the one rule for an answer).  It imports nothing of Django, of the rest of ``leaderboard``
or of ``workers`` (pyproject.toml's "The run contract is pure"), so the compute worker can use it
without the web app, and ``mypy --strict`` checks it (deploy/test.sh).
"""
