"""The table of SpanNormalisation takes this app's name (``annotation_spannormalisation`` ->
``span_grounding_spannormalisation``): a rename, which keeps the rows, the indexes and the constraints."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("span_grounding", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelTable(name="spannormalisation", table=None),
    ]
