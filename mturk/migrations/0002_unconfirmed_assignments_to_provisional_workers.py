"""Assignments that no MTurk sync has matched belonged to the Worker of the workerId in their URL; they move to a
provisional worker each (annotation 0004: Worker.claimed_external_id), so that a made-up accept no longer touches
the record of the worker who really has that id. Their gold records move with them (they were scored before the
claim was confirmed; a later sync that confirms the assignment scores them again for the real worker)."""

from django.db import migrations


def forwards(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    Worker = apps.get_model("annotation", "Worker")
    GoldRecord = apps.get_model("annotation", "GoldRecord")
    unconfirmed = (
        Assignment.objects.filter(worker__source="mturk", mturk_assignment__isnull=True)
        .exclude(worker__external_id="")
        .select_related("worker")
    )
    for assignment in unconfirmed.iterator():
        provisional = Worker.objects.create(source="mturk", claimed_external_id=assignment.worker.external_id)
        Assignment.objects.filter(pk=assignment.pk).update(worker=provisional)
        GoldRecord.objects.filter(assignment_id=assignment.pk).update(worker=provisional)


def backwards(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    Worker = apps.get_model("annotation", "Worker")
    GoldRecord = apps.get_model("annotation", "GoldRecord")
    for provisional in Worker.objects.filter(source="mturk").exclude(claimed_external_id="").iterator():
        real, _ = Worker.objects.get_or_create(source="mturk", external_id=provisional.claimed_external_id)
        Assignment.objects.filter(worker=provisional).update(worker=real)
        GoldRecord.objects.filter(worker=provisional).update(worker=real)
        provisional.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("mturk", "0001_initial"),
        ("annotation", "0004_worker_claimed_external_id"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
