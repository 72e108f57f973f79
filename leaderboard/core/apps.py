from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "leaderboard.core"
    label = "core"
    default_auto_field = "django.db.models.BigAutoField"
