"""The fact KB in the Django admin (changelist, add) and the facts API's DELETE (staff only; a variable in use is
refused with HTTP 400 naming what uses it)."""

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from corpus.hashing import fact_hash
from corpus.models import FactVariable, Topic

pytestmark = pytest.mark.django_db


@pytest.fixture
def kb():
    topic = Topic.objects.create(name="Nuclear energy", slug="nuclear-energy")
    facts = [
        FactVariable.objects.create(topic=topic, text=t, content_hash=fact_hash(topic.name, t))
        for t in ("Nuclear power plants generate radioactive waste.", "Nuclear energy is expensive.")
    ]
    return topic, facts


def test_admin_changelist_and_add_for_a_superuser(client, admin_user_obj, kb):
    topic, facts = kb
    client.force_login(admin_user_obj)
    url = reverse("admin:corpus_factvariable_changelist")
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Nuclear energy is expensive." in html and "radioactive waste" in html
    assert client.get(url, {"status__exact": "pending"}).status_code == 200  # the status filter
    assert client.get(url, {"q": "expensive"}).status_code == 200
    add = reverse("admin:corpus_factvariable_add")
    assert client.get(add).status_code == 200
    for text in ("Uranium mining harms indigenous communities.", "Reactors need cooling water."):
        r = client.post(
            add,
            {
                "topic": topic.pk,
                "text": text,
                "origin": "expert",
                "status": "active",
                "metadata": "{}",
                "merged_into": "",
            },
        )
        assert r.status_code == 302, r.content.decode()[:3000]
        made = FactVariable.objects.get(text=text)
        assert made.content_hash == fact_hash(topic.name, text) and made.origin == "expert"
    # the same fact twice is a form error, not a server error
    r = client.post(
        add,
        {
            "topic": topic.pk,
            "text": "Nuclear energy is expensive.",
            "origin": "expert",
            "status": "active",
            "metadata": "{}",
            "merged_into": "",
        },
    )
    assert r.status_code == 200 and "already" in r.content.decode()
    assert FactVariable.objects.filter(text="Nuclear energy is expensive.").count() == 1
    change = client.get(reverse("admin:corpus_factvariable_change", args=[facts[0].pk]))
    assert change.status_code == 200


def _api(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return c


def test_api_delete_is_staff_only_and_refuses_a_variable_in_use(kb, staff_user, django_user_model):
    from annotation import services

    topic, (waste, cost) = kb
    spare = FactVariable.objects.create(topic=topic, text="spare", content_hash=fact_hash(topic.name, "spare"))
    crowd = _api(django_user_model.objects.create_user("crowd", password="pw-crowd-123"))
    assert crowd.delete(f"/api/facts/{spare.pk}/").status_code == 403
    assert FactVariable.objects.filter(pk=spare.pk).exists()
    staff = _api(staff_user)
    assert staff.delete(f"/api/facts/{spare.pk}/").status_code == 204
    assert not FactVariable.objects.filter(pk=spare.pk).exists()
    # offered by a span_grounding item: refused, the variable stays
    project = services.create_project(name="Spans", slug="spans", task_type="span_grounding", status="active")
    services.add_items(
        project,
        [
            {
                "argument_id": None,
                "text": "Reactors make waste.",
                "topic": topic.name,
                "stance": "con",
                "tokens": [[0, 8], [9, 13], [14, 19], [19, 20]],
                "variables": [{"id": waste.pk, "text": waste.text}, {"id": cost.pk, "text": cost.text}],
                "suggestions": [],
            }
        ],
    )
    r = staff.delete(f"/api/facts/{waste.pk}/")
    assert r.status_code == 400 and "1 span_grounding item offer it" in r.json()["id"]
    assert "reject or merge it" in r.json()["id"]
    # a variable others were merged into: refused too
    merged = FactVariable.objects.create(topic=topic, text="dup", content_hash="dup", status="merged", merged_into=cost)
    project.items.all().delete()
    r = staff.delete(f"/api/facts/{cost.pk}/")
    assert r.status_code == 400 and "1 variable merged into it" in r.json()["id"]
    assert FactVariable.objects.filter(pk__in=[waste.pk, cost.pk, merged.pk]).count() == 3
    assert staff.delete(f"/api/facts/{waste.pk}/").status_code == 204  # nothing refers to it any more
