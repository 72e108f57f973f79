# The board version moved from rankings to challenges (the app whose change it counts).  State only:
# the tables keep their names (``db_table``) and their rows; rankings 0004 drops its state of them.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('challenges', '0009_breakdown_min_questions'),
        ('rankings', '0003_board_changes'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='BoardVersion',
                    fields=[
                        ('challenge', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='+', serialize=False, to='challenges.challenge')),
                        ('base', models.PositiveBigIntegerField(default=0)),
                        ('rebuild_requested_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'rankings_boardversion',
                    },
                ),
                migrations.CreateModel(
                    name='BoardChange',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('challenge_id', models.BigIntegerField(db_index=True)),
                    ],
                    options={
                        'db_table': 'rankings_boardchange',
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
