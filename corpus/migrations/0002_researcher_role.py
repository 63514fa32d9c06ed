from django.db import migrations

from argora.roles import grant

# What a Researcher may see and do with this app's models (argora.roles).
RESEARCHER_PERMISSIONS = (
    "add_topic", "change_topic", "view_topic", "view_document", "add_sentence", "change_sentence", "view_sentence",
    "add_factvariable", "change_factvariable", "view_factvariable", "view_debatetree", "view_debatenode",
    "add_release", "view_release", "view_releasefile",
)


class Migration(migrations.Migration):

    dependencies = [
        ('corpus', '0001_initial'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.RunPython(grant("corpus", RESEARCHER_PERMISSIONS), migrations.RunPython.noop),
    ]
