"""The web process's WSGI application (gunicorn: ``deploy/gunicorn.conf.py``), loaded and warmed.

Warmed: what every process would otherwise do on its first requests (import the URL conf and every
view, compile the templates, read the static files' manifest) is done here, before the process
accepts a connection.  A new gunicorn worker's first board page took about 100 ms instead of 3; with
``preload_app`` this runs once, in the master, and each worker is forked warm.
"""

from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.wsgi import get_wsgi_application
from django.template import engines
from django.template.backends.django import DjangoTemplates
from django.urls import get_resolver

from leaderboard.settings.choice import settings_module_set

settings_module_set()
application = get_wsgi_application()


def web_process_warm() -> int:
    """Import every view and compile the project's templates; the number of templates compiled."""
    get_resolver().reverse_dict  # noqa: B018 - the URL conf imported and every name's pattern made
    staticfiles_storage.exists("")  # any use sets it up: the manifest of hashed names read (empty if none)
    project = Path(settings.BASE_DIR).resolve() / "leaderboard"
    compiled = 0
    for engine in engines.all():
        if not isinstance(engine, DjangoTemplates):
            continue
        # The project's own templates only: the admin's hundred are compiled when an organizer opens it.
        for folder in (Path(d).resolve() for d in engine.template_dirs):
            if not folder.is_relative_to(project):
                continue
            for path in sorted(folder.rglob("*")):
                if path.is_file() and path.suffix in {".html", ".txt"}:
                    engine.get_template(path.relative_to(folder).as_posix())
                    compiled += 1
    return compiled


web_process_warm()
