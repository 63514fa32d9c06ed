"""``Project.engine``: the engine's own settings and records of a project move out of ``Project.config``, which then
holds only the task type's options. Every project's engine keys (the item order, the retrain loop's settings, the
studio's import and addition records, the guidelines' Markdown source) move from ``config`` to ``engine`` with their
values unchanged; the reverse moves them back (and the field goes). The key list is written here, not imported: this
migration must do the same thing whatever the code's ``ENGINE_KEYS`` become later."""

from django.db import migrations, models

MOVED_KEYS = frozenset(
    {
        "item_order",
        "retrain_kinds",
        "retrain_every",
        "retrain_max_rows",
        "retrain_max_steps",
        "retrain_max_seconds",
        "studio_import",
        "studio_additions",
        "guidelines_markdown",
    }
)
BATCH = 500


def _move(apps, schema_editor, *, source: str, target: str) -> None:
    """Move :data:`MOVED_KEYS` from the JSON field ``source`` to ``target`` of every project, in batches."""
    Project = apps.get_model("annotation", "Project")
    db = schema_editor.connection.alias
    batch = []
    for project in Project.objects.using(db).only("pk", "config", "engine").order_by("pk").iterator(chunk_size=BATCH):
        src, dst = getattr(project, source), getattr(project, target)
        if not isinstance(src, dict) or not src.keys() & MOVED_KEYS:
            continue
        setattr(project, source, {key: value for key, value in src.items() if key not in MOVED_KEYS})
        setattr(
            project, target, {**(dst if isinstance(dst, dict) else {}), **{k: src[k] for k in MOVED_KEYS if k in src}}
        )
        batch.append(project)
        if len(batch) >= BATCH:
            Project.objects.using(db).bulk_update(batch, ["config", "engine"])
            batch = []
    if batch:
        Project.objects.using(db).bulk_update(batch, ["config", "engine"])


def config_to_engine(apps, schema_editor) -> None:
    _move(apps, schema_editor, source="config", target="engine")


def engine_to_config(apps, schema_editor) -> None:
    _move(apps, schema_editor, source="engine", target="config")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_spannormalisation_moves_to_span_grounding"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="engine",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="the engine's settings and records of the project (item order, retraining, studio imports "
                "and additions, the guidelines' Markdown source); the task type's options stay in config",
            ),
        ),
        migrations.RunPython(config_to_engine, engine_to_config),
    ]
