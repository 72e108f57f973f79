from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0013_failure_detail_and_review_hold'),
    ]

    operations = [
        migrations.AddField(
            model_name='submission',
            name='run_plan',
            field=models.JSONField(blank=True, null=True),
        ),
    ]
