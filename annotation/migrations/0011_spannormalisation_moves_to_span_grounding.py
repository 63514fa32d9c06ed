"""SpanNormalisation leaves this app's state for its task type's own app (``span_grounding``, migration 0001, which
takes over the table made by 0003). No database operation: the table and its rows stay where they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0010_teams"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[migrations.DeleteModel(name="SpanNormalisation")],
        ),
    ]
