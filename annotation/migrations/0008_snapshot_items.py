"""Agreement snapshots split into a small summary and per-item rows (issue 25): adds ``AgreementSnapshot.summary``
/ ``n_items`` and the ``AgreementItemRow`` table, then moves the ``items`` list out of every stored project
snapshot's ``figures`` into rows (one snapshot at a time, rows inserted in batches); reversible."""

import django.db.models.deletion
from django.db import migrations, models

SUMMARY_KEYS = ("level", "alpha", "percent_agreement", "kappa", "n_units", "n_coders", "unsupported")
BATCH = 2000


def _summary(figures):
    f = figures.get("between") or figures
    return {k: f[k] for k in SUMMARY_KEYS if k in f}


def _key(it):
    a = it.get("agreement")
    return (a is None, a if a is not None else 0, it.get("position") or 0, it["item_id"])


def split_snapshots(apps, schema_editor):
    Snapshot = apps.get_model("annotation", "AgreementSnapshot")
    Row = apps.get_model("annotation", "AgreementItemRow")
    for pk in list(Snapshot.objects.order_by("pk").values_list("pk", flat=True)):
        snap = Snapshot.objects.get(pk=pk)
        figures = snap.figures if isinstance(snap.figures, dict) else {}
        items = figures.pop("items", None) if snap.scope == "project" else None
        if isinstance(items, list):
            items = [it for it in items if isinstance(it, dict) and "item_id" in it]
            figures["n_items"] = len(items)
            figures["n_items_without"] = sum(1 for it in items if it.get("agreement") is None)
            batch = []
            for rank, it in enumerate(sorted(items, key=_key)):
                batch.append(
                    Row(
                        snapshot_id=pk,
                        rank=rank,
                        item_id=it["item_id"],
                        position=it.get("position") or 0,
                        topic=str(it.get("topic") or ""),
                        text=str(it.get("text") or ""),
                        n=it.get("n") or 0,
                        agreement=it.get("agreement"),
                        majority=str(it.get("majority") or ""),
                        responses=it.get("responses") or [],
                        adjudication=it.get("adjudication"),
                    )
                )
                if len(batch) >= BATCH:
                    Row.objects.bulk_create(batch)
                    batch = []
            Row.objects.bulk_create(batch)
            snap.n_items = len(items)
        snap.figures = figures
        snap.summary = _summary(figures)
        snap.save(update_fields=["figures", "summary", "n_items"])


def join_snapshots(apps, schema_editor):
    Snapshot = apps.get_model("annotation", "AgreementSnapshot")
    Row = apps.get_model("annotation", "AgreementItemRow")
    for pk in list(Snapshot.objects.filter(scope="project").order_by("pk").values_list("pk", flat=True)):
        snap = Snapshot.objects.get(pk=pk)
        rows = Row.objects.filter(snapshot_id=pk).order_by("position", "item_id")
        figures = dict(snap.figures or {})
        figures.pop("n_items_without", None)
        if figures.pop("n_items", None) is not None or rows.exists():
            figures["items"] = [
                {
                    "item_id": r.item_id,
                    "position": r.position,
                    "topic": r.topic,
                    "text": r.text,
                    "n": r.n,
                    "agreement": r.agreement,
                    "majority": r.majority,
                    "responses": r.responses,
                    "adjudication": r.adjudication,
                }
                for r in rows
            ]
        snap.figures = figures
        snap.save(update_fields=["figures"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_model_annotators"),
    ]

    operations = [
        migrations.AddField(
            model_name="agreementsnapshot",
            name="n_items",
            field=models.PositiveIntegerField(default=0, help_text="answered items (AgreementItemRow rows stored)"),
        ),
        migrations.AddField(
            model_name="agreementsnapshot",
            name="summary",
            field=models.JSONField(
                blank=True, default=dict, help_text="the figures the dashboards list (SUMMARY_KEYS)"
            ),
        ),
        migrations.CreateModel(
            name="AgreementItemRow",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("rank", models.PositiveIntegerField()),
                ("position", models.PositiveIntegerField(default=0)),
                ("topic", models.TextField(blank=True)),
                ("text", models.TextField(blank=True)),
                ("n", models.PositiveIntegerField(default=0, help_text="responses")),
                ("agreement", models.FloatField(blank=True, null=True)),
                ("majority", models.TextField(blank=True)),
                ("responses", models.JSONField(default=list, help_text='[{"coder", "data", "is_expert"}, ...]')),
                ("adjudication", models.JSONField(blank=True, null=True)),
                (
                    "item",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="annotation.item",
                    ),
                ),
                (
                    "snapshot",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="item_rows",
                        to="annotation.agreementsnapshot",
                    ),
                ),
            ],
            options={
                "ordering": ["snapshot_id", "rank"],
                "constraints": [models.UniqueConstraint(fields=("snapshot", "rank"), name="one_item_row_per_rank")],
            },
        ),
        migrations.RunPython(split_snapshots, join_snapshots),
    ]
