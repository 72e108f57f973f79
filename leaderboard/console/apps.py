from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """Installed for its admin (the audited reveal) and its template tag; it has no models."""

    name = "leaderboard.console"
    label = "console"
    default_auto_field = "django.db.models.BigAutoField"
