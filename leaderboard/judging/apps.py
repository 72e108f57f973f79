from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "leaderboard.judging"
    label = "judging"
    default_auto_field = "django.db.models.BigAutoField"
