"""Fill a database with one answered project of every built-in task type, through the services (run with
``manage.py shell < tests/data/populate_db.py`` after ``migrate`` and ``load_demo``).

It uses only what every version of Argora since the task types existed offers (``annotation.services``, the task
types' item builders, the KB import), so it can fill a database made by an OLDER checkout: that database is
``tests/data/populated.sqlite3`` (made by commit 98caeef, before task types became packages), which
``tests/test_migrate_populated.py`` migrates with the current code and reads back.
"""

import json
import random
import tempfile
from pathlib import Path

from django.contrib.auth import get_user_model

from annotation import services
from annotation.models import Adjudication, Assignment, Item, Project
from corpus.models import FactVariable, Sentence, Topic

rng = random.Random(7)
User = get_user_model()
expert = User.objects.get(username="expert")
workers = [services.worker_for_external_id(f"populate-{k}", source="local") for k in range(3)]


def answer(project, item):
    p = item.payload
    tt = project.task_type
    if tt == "aspect":
        return {"aspects": [p["candidates"][0]["id"]], "no_aspect": False, "not_in_lists": False}
    if tt == "span_grounding":
        b, e = p["tokens"][0]
        return {"spans": [{"begin": b, "end": e, "variable": p["variables"][0]["id"]}], "rejected": []}
    if tt == "bws_similarity":
        ids = [q["id"] for q in p["pairs"]]
        best, worst = rng.sample(ids, 2)
        return {"best": best, "worst": worst}
    if tt == "validity_novelty":
        return {"validity": rng.choice(["yes", "no"]), "novelty": rng.choice(["yes", "no", "dont_know"])}
    if tt == "likert_debate":
        return {c: rng.randint(1, 4) for c in ("style", "content", "strategy", "overall")}
    raise ValueError(tt)


def answer_all(project, n_workers=3):
    for worker in workers[:n_workers]:
        while True:
            a = services.reserve_next_assignment(project, worker)
            if a is None:
                break
            responses = {}
            for item in services.assignment_items(a):
                if project.task_type == "pairwise_preference":
                    left = item.payload.get("left") or "a"
                    responses[item.pk] = {
                        "left": left,
                        "choice": rng.choice(["left", "right", "equal"]),
                        "fluent_left": "yes",
                        "fluent_right": "no",
                    }
                else:
                    responses[item.pk] = answer(project, item)
            try:
                services.submit_assignment(a, worker, responses)
            except services.ValidationFailed:
                # pairwise placement is decided per assignment: ask the task type's payload for this one
                tt = project.get_task_type()
                for item in services.assignment_items(a):
                    if project.task_type == "pairwise_preference":
                        wp = tt.worker_payload(project, item, assignment=a)
                        responses[item.pk]["left"] = wp.get("left", "a")
                services.submit_assignment(a, worker, responses)


topic = Topic.objects.get(name__iexact="school uniforms")
sentences = list(Sentence.objects.filter(topic=topic).order_by("pk")[:6])

aspect = services.create_project(
    name="Populated aspects",
    slug="pop-aspect",
    task_type="aspect",
    status="active",
    assignments_per_item=2,
    items_per_hit=3,
)
services.add_items_from_rows(aspect, sentences)
services.build_hits(aspect)
answer_all(aspect, 2)
first = Item.objects.filter(project=aspect).order_by("position").first()
Adjudication.objects.create(item=first, answer={"aspects": [], "no_aspect": True}, expert=expert, note="populated")

from django.db.models import Count  # noqa: E402

kb_topic = (
    FactVariable.objects.filter(status="active").values("topic").annotate(n=Count("pk")).order_by("-n").first()["topic"]
)
spans = services.create_project(
    name="Populated spans",
    slug="pop-spans",
    task_type="span_grounding",
    status="active",
    assignments_per_item=2,
    items_per_hit=2,
    config={"variables_per_item": [2, 3]},
)
services.add_items_from_rows(spans, list(Sentence.objects.filter(topic_id=kb_topic).order_by("pk")[:4]))
services.build_hits(spans)
answer_all(spans, 2)
try:
    from annotation.models import SpanNormalisation
except ImportError:  # newer checkouts keep it in the task type's package
    from annotation.task_types.span_grounding.models import SpanNormalisation
item = Item.objects.filter(project=spans).order_by("position").first()
SpanNormalisation.objects.create(
    item=item,
    begin=0,
    end=5,
    text=item.payload["text"][:5],
    variable=FactVariable.objects.filter(topic_id=kb_topic).first(),
    method="direct",
    score=0.9,
)

from annotation.bws import project as bws  # noqa: E402  (the old layout; this script runs on the old checkout)

bws_project = bws.create_project(
    name="Populated BWS", slug="pop-bws", config={"scorer": "jaccard", "attention_checks": 0}
)
bws.sample(bws_project, topic.name, 8, seed=1)
bws.build(bws_project)
services.set_project_status(bws_project, "active")
answer_all(bws_project, 3)
bws.store_scores(bws_project)

tmp = Path(tempfile.mkdtemp())
(tmp / "valnov.csv").write_text(
    "topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence\n"
    "uniforms,Uniforms are cheap.,Uniforms save money.,1,confident,-1,confident\n"
    "uniforms,Uniforms stop bullying.,Bullying is bad.,-1,majority,1,majority\n",
    encoding="utf-8",
)
from annotation.valnov import results as valnov  # noqa: E402

vn = valnov.get_project("pop-valnov", create=True, items_per_hit=2)
valnov.import_file(vn, tmp / "valnov.csv")
services.build_hits(vn)
services.set_project_status(vn, "active")
answer_all(vn, 3)

from annotation.ratings import items as ratings  # noqa: E402

(tmp / "pairs.jsonl").write_text(
    "\n".join(
        json.dumps(
            {
                "topic": "school uniforms",
                "stance": "pro",
                "a": {"system": "human", "text": f"Human argument {k}."},
                "b": {"system": "model", "text": f"Generated argument {k}."},
            }
        )
        for k in range(3)
    )
    + "\n",
    encoding="utf-8",
)
pp = ratings.get_project("pop-pairs", "pairwise_preference", create=True)
ratings.import_pairs(pp, tmp / "pairs.jsonl")
services.build_hits(pp)
services.set_project_status(pp, "active")
answer_all(pp, 2)
ld = ratings.get_project("pop-likert", "likert_debate", create=True, assignments_per_item=2)
ratings.import_trees(ld, length=2, limit=2)
services.build_hits(ld)
services.set_project_status(ld, "active")
answer_all(ld, 2)

from annotation.agreement.project import store_snapshots  # noqa: E402

for project in Project.objects.all():
    store_snapshots(project)
print({p.slug: Assignment.objects.filter(project=p, status="submitted").count() for p in Project.objects.all()})
