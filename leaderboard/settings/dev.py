from leaderboard.settings.base import *  # noqa: F403
from leaderboard.settings.base import env_bool

# Off unless asked for (READERBOARD_DEBUG=1): the demo is what people try, and Django's debug page
# shows them settings and code instead of the site's 404, 403 and 413 pages.  deploy/demo.sh
# serves the static files with DEBUG off (runserver --insecure).
DEBUG = env_bool("DEBUG", False)
