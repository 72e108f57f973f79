"""``readerboard``: the participants' command-line client, over the platform's documented REST API only.

Log in with a named API token, list challenges (phases, deadlines, what each takes, the quota left),
download the data and the starting kit, submit prediction files, code bundles and Docker images,
follow a submission to its score, read its log, show a board.  The standard library only, and no
Django nor any other part of the platform (an import-linter contract keeps it so): it installs on its
own, as ``readerboard_client`` (``pip install ./deploy/packages/client``), and runs as
``python -m leaderboard.client`` in a checkout.
"""

# The one version of the repository (scoring/__init__.py says the scheme); tests/test_packages.py keeps them equal.
__version__ = "2026.12.0"
