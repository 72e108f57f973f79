from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "leaderboard.accounts"
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
