"""Read back every project of a migrated database through the current code (``manage.py shell < this``): prints one
JSON line the test checks. See ``tests/test_migrate_populated.py``."""

import json
import tempfile

from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from annotation import access, selectors
from annotation.agreement.table import project_table
from annotation.models import Adjudication, Project
from annotation.task_types.bws_similarity.project import latest_scores
from annotation.task_types.span_grounding.models import SpanNormalisation
from corpus.releases import build_release, release_path

settings.ARTIFACT_ROOT = tempfile.mkdtemp()
client = Client()
# projects made before project teams have no team (none recorded who made them): the operator sees them all and
# gives them owners; the demo researcher sees none of them until then
expert = get_user_model().objects.get(username="expert")
assert not any(access.can(expert, p) for p in Project.objects.all()) or expert.is_superuser
client.force_login(get_user_model().objects.create_superuser("operator-after-upgrade", "op@example.org", "pw-op-12345"))
out = {"projects": {}}
for project in Project.objects.order_by("slug"):
    tt = project.get_task_type()
    table = project_table(project)
    pages = {
        "agreement": client.get(f"/projects/{project.slug}/agreement/").status_code,
        "items": client.get(f"/projects/{project.slug}/agreement/items/").status_code,
        "progress": client.get(f"/projects/{project.slug}/progress/").status_code,
    }
    if tt.results_page:
        from django.urls import reverse

        pages["results"] = client.get(reverse(tt.results_page[0], args=[project.slug])).status_code
    out["projects"][project.slug] = {
        "task_type": tt.name,
        "items": len(selectors.aggregated_items(project)),
        "n_responses": table["n_responses"],
        "level": table["level"],
        "pages": pages,
    }
out["dashboards"] = client.get("/dashboards/").status_code
out["adjudications"] = Adjudication.objects.count()
out["span_normalisations"] = SpanNormalisation.objects.count()
out["bws_scores"] = len(latest_scores(Project.objects.get(slug="pop-bws")).figures["pairs"])
release = build_release("populated-spans", "v1", kind="spans", config={"project": "pop-spans"})
out["spans_release_rows"] = sum(1 for _ in (release_path(release) / "spans.jsonl").open())
release = build_release(
    "populated-all", "v1", kind="annotations", config={"projects": list(Project.objects.values_list("slug", flat=True))}
)
out["annotations_release_rows"] = sum(1 for _ in (release_path(release) / "annotations.jsonl").open())
print("VERIFY " + json.dumps(out, sort_keys=True))
