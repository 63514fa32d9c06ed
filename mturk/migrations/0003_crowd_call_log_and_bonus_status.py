"""MTurk's call log and bonuses move onto the crowd platforms' shared models (annotation.crowd.models), keeping every
row: the call log gains the ``uncertain`` state (choices only) and ``repeatable`` (True for every existing call, as
every MTurk call so far is safe to repeat under its request token); the bonus's ``paid`` flag becomes the shared
``status`` (paid -> "paid", not paid -> "planned"), and back on a reverse migration."""

import django.db.models.deletion
from django.db import migrations, models

STATUS_CHOICES = [("planned", "Planned"), ("set-up", "Set up on the platform (not paid yet)"), ("paid", "Paid")]


def paid_to_status(apps, schema_editor):
    bonus = apps.get_model("mturk", "MTurkBonus")
    bonus.objects.filter(paid=True).update(status="paid")
    bonus.objects.filter(paid=False).update(status="planned")


def status_to_paid(apps, schema_editor):
    bonus = apps.get_model("mturk", "MTurkBonus")
    bonus.objects.filter(status="paid").update(paid=True)
    bonus.objects.exclude(status="paid").update(paid=False)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0010_teams"),
        ("mturk", "0002_unconfirmed_assignments_to_provisional_workers"),
    ]

    operations = [
        migrations.AddField(
            model_name="mturkbonus",
            name="status",
            field=models.CharField(choices=STATUS_CHOICES, db_index=True, default="planned", max_length=10),
        ),
        migrations.RunPython(paid_to_status, status_to_paid),
        migrations.RemoveField(
            model_name="mturkbonus",
            name="paid",
        ),
        migrations.AddField(
            model_name="mturkoperation",
            name="repeatable",
            field=models.BooleanField(default=True, help_text="safe to send again when the outcome is unknown"),
        ),
        migrations.AlterField(
            model_name="mturkbonus",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="%(app_label)s_bonuses",
                to="annotation.project",
            ),
        ),
        migrations.AlterField(
            model_name="mturkoperation",
            name="project",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="%(app_label)s_operations",
                to="annotation.project",
            ),
        ),
        migrations.AlterField(
            model_name="mturkoperation",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending (written before the call; resumed by the next sync)"),
                    ("done", "Done"),
                    ("failed", "Failed (the platform refused; see error)"),
                    ("uncertain", "Outcome unknown (not repeated automatically: check on the platform, then resolve)"),
                ],
                db_index=True,
                default="pending",
                max_length=10,
            ),
        ),
    ]
