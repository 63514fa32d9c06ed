from django.db import migrations

from argora.roles import grant

# What a Researcher may see and do with this app's models (argora.roles).
RESEARCHER_PERMISSIONS = (
    "view_modelversion", "change_modelversion", "view_silverrun", "view_silverlabel",
)


class Migration(migrations.Migration):

    dependencies = [
        ('ml', '0002_silverrun_silverlabel'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.RunPython(grant("ml", RESEARCHER_PERMISSIONS), migrations.RunPython.noop),
    ]
