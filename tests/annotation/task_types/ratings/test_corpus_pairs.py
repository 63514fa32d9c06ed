"""``manage.py ratings pairwise --from-corpus``: candidates paired with corpus arguments of the same topic and stance
(seeded, all-or-nothing with ``file:line: reason`` + exit 2), and the Likert 5-10 reviewers warning."""

import pytest
from django.contrib.admin.sites import AdminSite
from django.contrib.messages.storage.fallback import FallbackStorage
from django.core.management import call_command
from django.test import RequestFactory

from annotation.models import Item, Project
from annotation.task_types.likert_debate import likert
from annotation.task_types.ratings import items, results
from corpus.models import Sentence, Topic

from .helpers import DEBATES, write_jsonl

pytestmark = pytest.mark.django_db

CANDIDATES = [
    {"id": "g1", "topic": "Nuclear energy", "stance": "pro", "text": "Nuclear power keeps the lights on without CO2."},
    {
        "id": "g2",
        "topic": "nuclear energy",
        "stance": "PRO",
        "text": "Reactors run day and night, whatever the weather.",
    },
    {"id": "g3", "topic": "Nuclear energy", "stance": "con", "text": "Accidents like Chernobyl can happen again."},
]


def corpus():
    nuclear = Topic.objects.create(name="Nuclear energy")
    other = Topic.objects.create(name="School uniforms")
    rows = [
        (nuclear, "pro", "Nuclear energy is low-carbon.", "ukp"),
        (nuclear, "pro", "Nuclear plants deliver base-load power.", "ukp"),
        (nuclear, "con", "Nuclear waste must be stored for millennia.", "ukp"),
        (nuclear, "con", "Uranium mining harms the environment.", "web"),
        (nuclear, "none", "The plant opened in 1975.", "ukp"),
        (other, "pro", "Uniforms reduce bullying.", "ukp"),
    ]
    return [
        Sentence.objects.create(topic=t, stance=s, text=x, source=src, content_hash=f"h{n}")
        for n, (t, s, x, src) in enumerate(rows)
    ]


def run(*args):
    call_command("ratings", *[str(a) for a in args])


def test_from_corpus_pairs_each_candidate_with_a_reference_of_its_topic_and_stance(tmp_path, capsys):
    sentences = corpus()
    by_id = {s.pk: s for s in sentences}
    path = write_jsonl(tmp_path, CANDIDATES, "cands.jsonl")
    run("pairwise", "--project", "cp", "--from-corpus", path, "--system", "arg-ctrl", "--r", 2, "--activate")
    assert "3 items created" in capsys.readouterr().out
    project = Project.objects.get(slug="cp")
    assert (project.task_type, project.status, project.assignments_per_item) == ("pairwise_preference", "active", 2)
    payloads = {i.external_key: i.payload for i in Item.objects.filter(project=project)}
    assert set(payloads) == {"pair:g1", "pair:g2", "pair:g3"}
    for cand in CANDIDATES:
        p = payloads[f"pair:{cand['id']}"]
        ref = by_id[p["source"]["sentence"]]
        assert p["a"] == {"system": "arg-ctrl", "text": cand["text"]}
        assert p["b"] == {"system": "reference", "text": ref.text}
        assert (ref.topic.name, ref.stance) == ("Nuclear energy", cand["stance"].lower())
        assert p["topic"] == "Nuclear energy" and p["stance"] == cand["stance"].lower()
    # the two pro candidates get the two different pro references (handed out in turn)
    assert payloads["pair:g1"]["b"]["text"] != payloads["pair:g2"]["b"]["text"]
    # seeded: reading again gives the same pairs; re-importing adds nothing
    again = items.read_corpus_pairs(path, system="arg-ctrl")
    assert [p["b"]["text"] for p in again] == [payloads[f"pair:{c['id']}"]["b"]["text"] for c in CANDIDATES]
    run("pairwise", "--project", "cp", "--from-corpus", path, "--system", "arg-ctrl")
    assert "0 items created, 3 already present" in capsys.readouterr().out
    # --source keeps only that corpus: the con candidate gets the "ukp" con reference
    only = items.read_corpus_pairs(path, source="ukp")
    assert only[2]["b"]["text"] == "Nuclear waste must be stored for millennia."
    assert only[0]["a"]["system"] == "candidate"  # default system name


def test_from_corpus_results_map_back_to_systems(tmp_path):
    from annotation.models import Worker

    from .helpers import run_worker

    corpus()
    project = items.get_project("cp2", "pairwise_preference", create=True, status="active", assignments_per_item=1)
    items.import_corpus_pairs(project, write_jsonl(tmp_path, CANDIDATES, "c.jsonl"), system="arg-ctrl")

    def prefer_reference(item, a):
        from annotation.task_types.pairwise_preference.pairwise import left_side

        left = left_side(a, item)
        return {
            "choice": "left" if item.payload[left]["system"] == "reference" else "right",
            "fluent_left": True,
            "fluent_right": True,
        }

    run_worker(project, Worker.objects.create(source="prolific", external_id="w"), prefer_reference)
    rows = {r["system"]: r for r in results.pairwise_results(project)["systems"]}
    assert rows["reference"]["wins"] == 3 and rows["arg-ctrl"]["losses"] == 3


@pytest.mark.parametrize(
    "row, line, reason",
    [
        ({"topic": "Climate", "stance": "pro", "text": "x"}, 2, 'topic "Climate" is not in the corpus'),
        ({"topic": "School uniforms", "stance": "con", "text": "x"}, 2, "no reference argument in the corpus"),
        ({"topic": "Nuclear energy", "stance": "neutral", "text": "x"}, 2, '"stance" must be "pro" or "con"'),
        ({"topic": "Nuclear energy", "stance": "pro"}, 2, 'missing "text"'),
        ({"topic": "Nuclear energy", "stance": "pro", "text": "x", "system": "reference"}, 2, "name of the corpus"),
        ({**CANDIDATES[1], "id": "g1"}, 2, "duplicate id"),
        ("{broken", 2, "invalid JSON"),
    ],
)
def test_from_corpus_bad_rows_exit_2_and_write_nothing(tmp_path, capsys, row, line, reason):
    corpus()
    path = write_jsonl(tmp_path, [CANDIDATES[0], row, CANDIDATES[2]], "bad.jsonl")
    with pytest.raises(SystemExit) as exc:
        run("pairwise", "--project", "bad", "--from-corpus", path)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{path}:{line}: ") and reason in err, err
    assert not Project.objects.filter(slug="bad").exists() and Item.objects.count() == 0


def test_from_corpus_and_file_are_exclusive(tmp_path, capsys):
    path = write_jsonl(tmp_path, CANDIDATES)
    with pytest.raises(SystemExit) as exc:
        run("pairwise", "--project", "x", "--from-corpus", path, "--file", path)
    assert exc.value.code == 2 and "not both" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run("pairwise", "--project", "x")
    assert "--from-corpus" in capsys.readouterr().err


# --- likert: 5-10 reviewers per debate -------------------------------------------------------------------------
@pytest.mark.parametrize("r, warned", [(3, True), (4, True), (5, False), (10, False), (11, True)])
def test_likert_cli_warns_outside_5_to_10_reviewers(tmp_path, capsys, r, warned):
    run("debates", "--project", f"ld{r}", "--file", write_jsonl(tmp_path, DEBATES), "--r", r)
    out, err = capsys.readouterr()
    assert "4 items created" in out  # a warning, not an error: the items are there
    assert Item.objects.filter(project__slug=f"ld{r}").count() == 4
    assert ("warning:" in err and f"R = {r} reviewer" in err and "5-10" in err) is warned, err
    res = results.likert_results(Project.objects.get(slug=f"ld{r}"))
    assert bool(res["warnings"]) is warned
    assert ("warning: " in results.text_report(res)) is warned


def test_likert_warning_on_results_page_and_admin(tmp_path, client, django_user_model):
    from annotation.admin import ProjectAdmin

    run("debates", "--project", "few", "--file", write_jsonl(tmp_path, DEBATES), "--r", 2)
    project = Project.objects.get(slug="few")
    staff = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(staff)
    html = client.get(f"/projects/{project.slug}/results/").content.decode()
    assert 'id="ratings-warning"' in html and "R = 2 reviewers per debate" in html
    request = RequestFactory().post("/admin/")
    request.user = staff
    request.session = client.session
    request._messages = FallbackStorage(request)
    ProjectAdmin(Project, AdminSite()).save_model(request, project, None, True)
    texts = [str(m) for m in request._messages]
    assert any("R = 2 reviewers per debate" in t for t in texts), texts
    assert (
        likert.reviewer_warning(
            Project.objects.create(name="p", slug="p", task_type="pairwise_preference", assignments_per_item=2)
        )
        is None
    )
