from django.apps import AppConfig


class RankingsConfig(AppConfig):
    name = "leaderboard.rankings"
    label = "rankings"
    default_auto_field = "django.db.models.BigAutoField"
