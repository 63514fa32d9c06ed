"""Set up a doccano 1.8.4 project for bench/allocation.py; run with the python of doccano's own venv (never Argora's).

    <doccano-venv>/bin/python bench/doccano_setup.py --tag T --examples N --users U [--labels 3]

Uses doccano's own settings (``config.settings.production``) and database (``DATABASE_URL``, set by the caller):
migrates it and creates its roles (what ``doccano init`` does), then one text-classification project with
``--labels`` category types, ``--examples`` examples and ``--users`` annotators (project members with a token).
Prints one JSON line: ``{"project": id, "labels": [ids], "examples": [ids], "tokens": [keys]}``. Contains no doccano
code: it only calls doccano's installed package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def backend_dir() -> Path:
    import backend  # doccano's installed package (the doccano venv)

    return Path(backend.__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tag", required=True)
    parser.add_argument("--examples", type=int, required=True)
    parser.add_argument("--users", type=int, required=True)
    parser.add_argument("--labels", type=int, default=3)
    parser.add_argument("--migrate-only", action="store_true")
    args = parser.parse_args()

    sys.path.insert(0, str(backend_dir()))  # doccano's apps are top-level modules inside backend/
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("create_roles", verbosity=0)
    if args.migrate_only:
        print(json.dumps({"migrated": True}))
        return 0

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from examples.models import Example
    from label_types.models import CategoryType
    from projects.models import Member, ProjectType, TextClassificationProject
    from rest_framework.authtoken.models import Token
    from roles.models import Role

    User = get_user_model()
    with transaction.atomic():
        admin, _ = User.objects.get_or_create(username="bench-admin", defaults={"is_superuser": True, "is_staff": True})
        project = TextClassificationProject.objects.create(
            name=f"bench {args.tag}",
            description="bench",
            created_by=admin,
            project_type=ProjectType.DOCUMENT_CLASSIFICATION,
            single_class_classification=False,
        )
        labels = [CategoryType.objects.create(project=project, text=f"label{i}") for i in range(args.labels)]
        Example.objects.bulk_create(
            [
                Example(project=project, text=f"bench sentence {i}", meta={}, upload_name=f"bench-{i}")
                for i in range(args.examples)
            ],
            batch_size=500,
        )
        example_ids = list(Example.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
        role = Role.objects.get(name=settings.ROLE_ANNOTATOR)
        tokens = []
        for i in range(args.users):
            user = User.objects.create_user(f"bench-{args.tag}-{i}", password=None)
            Member.objects.create(user=user, project=project, role=role)
            tokens.append(Token.objects.create(user=user).key)
    print(
        json.dumps(
            {"project": project.pk, "labels": [label.pk for label in labels], "examples": example_ids, "tokens": tokens}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
