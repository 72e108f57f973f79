from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "leaderboard.submissions"
    label = "submissions"
    default_auto_field = "django.db.models.BigAutoField"
