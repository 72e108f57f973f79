from django.apps import AppConfig
from django.db.backends.signals import connection_created

from leaderboard.core.database import database_file_restrict


class CoreConfig(AppConfig):
    name = "leaderboard.core"
    label = "core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:


        connection_created.connect(database_file_restrict, dispatch_uid="readerboard-database-file-restrict")
