"""SpanNormalisation moves from the ``annotation`` app to this one, with its rows.

Before, ``annotation`` migration 0003 made the table ``annotation_spannormalisation``; ``annotation`` 0011 took the
model out of that app's state and left the table. Here the model enters this app's state on that same table (no
database operation: every row and the foreign keys stay), and the content type ``annotation.spannormalisation``
becomes ``span_grounding.spannormalisation``, so its permissions (the Researcher group's ``view_spannormalisation``)
and admin log entries follow it. 0002 then gives the table this app's name. On a new database 0003 made the table
just before, and there is no content type yet (``migrate`` makes them afterwards).
"""

import django.db.models.deletion
from django.db import migrations, models

OLD, NEW, MODEL = "annotation", "span_grounding", "spannormalisation"


def content_type_follows(apps, schema_editor, old=OLD, new=NEW):
    """The content type of the model changes app label; where one under the new label exists already (a
    ``migrate`` run in between made it), its permissions give way to the old one's, which keep their ids."""
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    db = schema_editor.connection.alias
    before = content_type.objects.using(db).filter(app_label=old, model=MODEL).first()
    if before is None:
        return
    after = content_type.objects.using(db).filter(app_label=new, model=MODEL).first()
    if after is not None:
        kept = permission.objects.using(db).filter(content_type=before).values_list("codename", flat=True)
        permission.objects.using(db).filter(content_type=after, codename__in=list(kept)).delete()
        permission.objects.using(db).filter(content_type=after).update(content_type=before)
        after.delete()
    content_type.objects.using(db).filter(pk=before.pk).update(app_label=new)


def content_type_returns(apps, schema_editor):
    content_type_follows(apps, schema_editor, old=NEW, new=OLD)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0011_spannormalisation_moves_to_span_grounding"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("corpus", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="SpanNormalisation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("begin", models.PositiveIntegerField()),
                        ("end", models.PositiveIntegerField()),
                        ("text", models.TextField()),
                        (
                            "method",
                            models.CharField(
                                blank=True,
                                choices=[
                                    ("direct", "Direct (cosine)"),
                                    ("indirect", "Indirect (community neighbour)"),
                                    ("new", "New KB variable (accepted proposal)"),
                                    ("merged", "Merged proposal"),
                                    ("", "Unmapped"),
                                ],
                                default="",
                                max_length=10,
                            ),
                        ),
                        (
                            "score",
                            models.FloatField(
                                blank=True,
                                help_text="cosine to the variable (direct) or to the neighbour it was mapped through (indirect)",
                                null=True,
                            ),
                        ),
                        ("community", models.CharField(blank=True, max_length=300)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "item",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="span_normalisations",
                                to="annotation.item",
                            ),
                        ),
                        (
                            "proposal",
                            models.ForeignKey(
                                blank=True,
                                help_text="the proposed variable created for this span's unmapped community",
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="proposal_spans",
                                to="corpus.factvariable",
                            ),
                        ),
                        (
                            "variable",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="normalised_spans",
                                to="corpus.factvariable",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotation_spannormalisation",
                        "ordering": ["item_id", "begin"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("item", "begin", "end"), name="span_normalisation_unique_span"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("begin__lt", models.F("end"))),
                                name="span_normalisation_begin_before_end",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("method", ""), ("variable__isnull", False), _connector="OR"),
                                name="span_normalisation_method_has_variable",
                            ),
                        ],
                    },
                ),
            ],
        ),
        migrations.RunPython(content_type_follows, content_type_returns, elidable=False),
    ]
