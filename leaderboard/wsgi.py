from django.core.wsgi import get_wsgi_application

from leaderboard.settings.choice import settings_module_set

settings_module_set()
application = get_wsgi_application()
