from leaderboard.settings.base import *  # noqa: F403
from leaderboard.settings.base import env_bool

DEBUG = env_bool("DEBUG", True)
