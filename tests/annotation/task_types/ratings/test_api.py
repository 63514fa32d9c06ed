"""Both rating task types through the JSON API (/api/assignments/<id>/submit/): bad input -> HTTP 400 naming the
field and nothing written; the HIT page (placement, no system names) and the no-JS form."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Assignment, Response, Worker
from annotation.task_types.pairwise_preference.pairwise import left_side

from .helpers import likert_project, pairwise_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


def client_for(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return c


def reserve(c, slug):
    r = c.post(f"/api/projects/{slug}/next/", format="json")
    assert r.status_code == 200, r.content
    return r.json()


PGOOD = {"choice": "left", "fluent_left": "yes", "fluent_right": "no"}  # "left": the server's placement
LGOOD = {"style": 3, "content": 2, "strategy": 4, "overall": 1}


@pytest.mark.parametrize(
    "bad, field, reason",
    [
        ({"choice": "left", "fluent_left": "yes"}, "fluent_right", "fluent"),  # missing dimension
        ({"fluent_left": "yes", "fluent_right": "no"}, "choice", "choose"),
        ({"choice": "A", "fluent_left": "yes", "fluent_right": "no"}, "choice", "not a choice"),
        ({"choice": "left", "fluent_left": 3, "fluent_right": "no"}, "fluent_left", "not yes or no"),
        ({"left": "c", "choice": "left", "fluent_left": "yes", "fluent_right": "no"}, "left", "neither a nor b"),
        ({**PGOOD, "score": 5}, "score", "unknown field"),
    ],
)
def test_pairwise_bad_input_400_writes_nothing(tmp_path, alice, bad, field, reason):
    pairwise_project(tmp_path, items_per_hit=2)
    c = client_for(alice)
    body = reserve(c, "pp")
    first, second = (str(i["id"]) for i in body["items"])
    r = c.post(
        f"/api/assignments/{body['assignment']}/submit/", {"responses": {first: PGOOD, second: bad}}, format="json"
    )
    assert r.status_code == 400, r.content
    key = f"responses.{second}.{field}"
    assert key in r.json()["errors"] and reason in r.json()["errors"][key], r.json()
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=body["assignment"]).status == Assignment.Status.RESERVED


@pytest.mark.parametrize(
    "bad, field, reason",
    [
        ({**LGOOD, "style": 5}, "style", "out of range"),  # rating out of range
        ({**LGOOD, "overall": 0}, "overall", "out of range"),
        ({**LGOOD, "content": "good"}, "content", "out of range"),
        ({k: v for k, v in LGOOD.items() if k != "strategy"}, "strategy", "rate strategy"),  # missing dimension
        ({**LGOOD, "fluency": 2}, "fluency", "unknown field"),
    ],
)
def test_likert_bad_input_400_writes_nothing(tmp_path, alice, bad, field, reason):
    likert_project(tmp_path, items_per_hit=2)
    c = client_for(alice)
    body = reserve(c, "ld")
    first, second = (str(i["id"]) for i in body["items"])
    r = c.post(
        f"/api/assignments/{body['assignment']}/submit/", {"responses": {first: LGOOD, second: bad}}, format="json"
    )
    assert r.status_code == 400, r.content
    key = f"responses.{second}.{field}"
    assert key in r.json()["errors"] and reason in r.json()["errors"][key], r.json()
    assert Response.objects.count() == 0


@pytest.mark.parametrize("kind", ["pairwise", "likert"])
def test_unknown_item_400_writes_nothing_then_good_submission(tmp_path, alice, kind):
    slug, good = ("pp", PGOOD) if kind == "pairwise" else ("ld", LGOOD)
    (pairwise_project if kind == "pairwise" else likert_project)(tmp_path, items_per_hit=2)
    c = client_for(alice)
    body = reserve(c, slug)
    responses = {str(i["id"]): good for i in body["items"]}
    r = c.post(
        f"/api/assignments/{body['assignment']}/submit/", {"responses": {**responses, "999999": good}}, format="json"
    )
    assert r.status_code == 400 and "unknown item" in r.json()["errors"]["responses.999999"]
    assert Response.objects.count() == 0
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 200, r.content
    stored = list(Response.objects.values_list("data", flat=True))
    assert len(stored) == 2
    if kind == "likert":
        assert stored == [LGOOD, LGOOD]
    else:
        a = Assignment.objects.get(pk=body["assignment"])
        for item in services.assignment_items(a):  # the server's placement was used
            left = left_side(a, item)
            d = Response.objects.get(item=item).data
            assert (d["left"], d["left_system"]) == (left, item.payload[left]["system"])
            assert d["choice"] == "left" and d["fluent_left"] is True and d["fluent_right"] is False


def test_api_payload_hides_system_names(tmp_path, alice):
    pairwise_project(tmp_path, items_per_hit=2)
    likert_project(tmp_path, items_per_hit=2)
    c = client_for(alice)
    for slug in ("pp", "ld"):
        body = reserve(c, slug)
        text = str(body["items"])
        for secret in ("arg-ctrl", "reference", "bart", "human", "debate:"):
            assert secret not in text, (slug, secret)


def test_api_payload_gives_the_placement_and_a_claimed_other_placement_is_refused(tmp_path, alice):
    """The server is authoritative: the payload says which argument goes left; a submission claiming the other
    order gets HTTP 400 naming ``left`` and writes nothing; the right order (or none) is stored."""
    pairwise_project(tmp_path, items_per_hit=2)
    c = client_for(alice)
    body = reserve(c, "pp")
    a = Assignment.objects.get(pk=body["assignment"])
    by_id = {i.pk: i for i in services.assignment_items(a)}
    for entry in body["items"]:
        left = left_side(a, by_id[entry["id"]])
        assert entry["payload"]["left"] == left and entry["payload"]["right"] == ("b" if left == "a" else "a")
    again = reserve(c, "pp")  # asking again gives the held assignment, with the same placement
    assert again["assignment"] == a.pk
    assert [i["payload"]["left"] for i in again["items"]] == [i["payload"]["left"] for i in body["items"]]
    first, second = body["items"]
    wrong = "b" if second["payload"]["left"] == "a" else "a"
    responses = {
        str(first["id"]): {**PGOOD, "left": first["payload"]["left"]},
        str(second["id"]): {**PGOOD, "left": wrong},
    }
    r = c.post(f"/api/assignments/{a.pk}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 400, r.content
    err = r.json()["errors"][f"responses.{second['id']}.left"]
    assert f"argument {second['payload']['left']} was shown on the left" in err
    assert Response.objects.count() == 0
    # naming the system shown on the left is the same claim
    system = by_id[second["id"]].payload[wrong]["system"]
    r = c.post(
        f"/api/assignments/{a.pk}/submit/",
        {"responses": {**responses, str(second["id"]): {**PGOOD, "left": system}}},
        format="json",
    )
    assert r.status_code == 400 and Response.objects.count() == 0
    responses[str(second["id"])] = PGOOD
    r = c.post(f"/api/assignments/{a.pk}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 200, r.content
    for entry in body["items"]:
        assert Response.objects.get(item_id=entry["id"]).data["left"] == entry["payload"]["left"]


def test_pairwise_page_order_and_no_js_form(tmp_path, client, alice):
    project = pairwise_project(tmp_path, items_per_hit=4)
    client.force_login(alice)
    html = client.get("/work/pp/").content.decode()
    a = Assignment.objects.get(worker__user=alice)
    its = services.assignment_items(a)
    for item in its:
        left = left_side(a.pk, item.pk)
        right = "b" if left == "a" else "a"
        assert f'name="item-{item.pk}-left" value="{left}"' in html
        assert html.index(item.payload[left]["text"]) < html.index(item.payload[right]["text"])
    assert "arg-ctrl" not in html and ">reference<" not in html
    again = client.get("/work/pp/").content.decode()  # a reload shows the same order
    assert Assignment.objects.filter(worker__user=alice).count() == 1
    for item in its:
        assert f'name="item-{item.pk}-left" value="{left_side(a.pk, item.pk)}"' in again
    data = {"assignment": a.pk, "feedback": ""}
    for item in its:
        data.update(
            {
                f"item-{item.pk}-left": left_side(a.pk, item.pk),
                f"item-{item.pk}-choice": "equal",
                f"item-{item.pk}-fluent_left": "yes",
            }
        )
    r = client.post("/work/pp/", data)
    assert r.status_code == 400 and "fluent_right" in r.content.decode() and Response.objects.count() == 0
    assert 'value="equal" checked' in r.content.decode()
    for item in its:
        data[f"item-{item.pk}-fluent_right"] = "no"
    r = client.post("/work/pp/", data)
    assert r.status_code == 302
    stored = {x.item_id: x.data for x in Response.objects.all()}
    for item in its:
        left = left_side(a.pk, item.pk)
        assert stored[item.pk] == {
            "left": left,
            "left_system": item.payload[left]["system"],
            "choice": "equal",
            "fluent_left": True,
            "fluent_right": False,
        }
    assert project.pk


def test_likert_page_and_no_js_form(tmp_path, client, alice):
    likert_project(tmp_path, items_per_hit=2)
    client.force_login(alice)
    html = client.get("/work/ld/").content.decode()
    a = Assignment.objects.get(worker__user=alice)
    its = services.assignment_items(a)
    for item in its:
        for turn in item.payload["turns"]:
            assert turn["text"] in html
    assert html.count('value="4"') == 8  # 4 criteria x 2 debates
    assert "task_types/likert_debate/hit.js" in html and "<kbd>S</kbd> <kbd>C</kbd> <kbd>T</kbd> <kbd>O</kbd>" in html
    data = {"assignment": a.pk, "feedback": ""}
    for item in its:
        data.update({f"item-{item.pk}-{c}": "2" for c in ("style", "content", "strategy")})
    data[f"item-{its[0].pk}-overall"] = "4"
    r = client.post("/work/ld/", data)
    assert r.status_code == 400 and "rate overall" in r.content.decode() and Response.objects.count() == 0
    data[f"item-{its[1].pk}-overall"] = "1"
    assert client.post("/work/ld/", data).status_code == 302
    stored = {x.item_id: x.data for x in Response.objects.all()}
    assert stored == {
        its[0].pk: {"style": 2, "content": 2, "strategy": 2, "overall": 4},
        its[1].pk: {"style": 2, "content": 2, "strategy": 2, "overall": 1},
    }
    assert Worker.objects.count() == 1
