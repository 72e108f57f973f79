# The board version moved to challenges (challenges 0010 takes over the state of both models).  State
# only: the tables and their rows stay where they are.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('rankings', '0003_board_changes'),
        ('challenges', '0010_board_version'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='BoardChange'),
                migrations.DeleteModel(name='BoardVersion'),
            ],
            database_operations=[],
        ),
    ]
