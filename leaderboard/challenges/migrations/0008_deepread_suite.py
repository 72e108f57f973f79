from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('challenges', '0007_dataset_tags'),
    ]

    operations = [
        migrations.AlterField(
            model_name='challenge',
            name='metric_suite',
            field=models.CharField(choices=[('mrqa', 'MRQA (per-dataset EM/F1, macro-F1 ranks)'), ('mrc2018', 'MRC2018 / DuReader (ROUGE-L ranks, BLEU-4)'), ('squad2', 'SQuAD 2.0 / unanswerable (EM/F1, HasAns/NoAns, detection)'), ('quac', 'QuAC (F1, HEQ)'), ('coqa', 'CoQA (F1, in/out of domain)'), ('deepread', 'Deep Read (HumSent ranks, AutSent, P&R)')], max_length=16),
        ),
    ]
