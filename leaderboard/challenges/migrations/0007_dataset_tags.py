from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('challenges', '0006_phase_protocol_modes'),
    ]

    operations = [
        migrations.AddField(
            model_name='dataset',
            name='tags',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
