from leaderboard.settings.base import *  # noqa: F403
from leaderboard.settings.base import MIDDLEWARE, env_bool

# Off unless asked for (READERBOARD_DEBUG=1): the demo is what people try, and Django's debug page
# shows them settings and code instead of the site's 404, 403 and 413 pages.
DEBUG = env_bool("DEBUG", False)

# Static files as production serves them: WhiteNoise, from what collectstatic wrote (deploy/demo.sh runs
# it), and runserver --nostatic.  Django's static view (runserver --insecure) answered a path such as
# /static/..%2f..%2fsettings.py with a 500 (SuspiciousFileOperation); WhiteNoise serves only the files
# it collected, and anything else under /static/ is the site's 404.
_security = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware")
MIDDLEWARE = [*MIDDLEWARE[: _security + 1], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[_security + 1 :]]
