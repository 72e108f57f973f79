from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "leaderboard.accounts"
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the token scheme with the OpenAPI schema generator.
        from leaderboard.accounts import auth  # noqa: PLC0415, F401 (imported once the app registry is ready: the scheme's module reads the models)
