"""Every answer under /api/ is JSON -- a CSRF failure, a 400, 403, 404, 405 or 500, whether DRF or Django gives it --
while the rest of the site keeps Django's HTML pages (argora.errors, the URLconf's handlers, CSRF_FAILURE_VIEW)."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import include, path
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from argora import errors, urls
from corpus.api import TopicViewSet

pytestmark = pytest.mark.django_db


def _plain(exc):
    def view(request):  # a Django view (not DRF): what it raises goes to the URLconf's handlers
        if exc is not None:
            raise exc
        return HttpResponse("ok")

    return view


# this module is also the URLconf of the tests marked ``urls``: the site, plus plain views inside and outside /api/
urlpatterns = [
    *[
        path(f"{prefix}plain/{name}/", _plain(exc))
        for prefix in ("api/", "")
        for name, exc in (
            ("ok", None),
            ("forbidden", PermissionDenied("not for you")),
            ("suspicious", SuspiciousOperation("odd")),
            ("broken", RuntimeError("boom")),
        )
    ],
    path("", include("argora.urls")),
]
handler400, handler403, handler404, handler500 = (urls.handler400, urls.handler403, urls.handler404, urls.handler500)


def is_json(response) -> bool:
    return response["Content-Type"].startswith("application/json")


@pytest.mark.urls(__name__)
def test_django_errors_under_api_are_json_and_html_elsewhere():
    c = Client(raise_request_exception=False, enforce_csrf_checks=True)
    for name, status, body in (
        ("forbidden", 403, {"detail": "not for you"}),
        ("suspicious", 400, {"errors": {"request": "bad request"}}),
        ("broken", 500, {"detail": "Server error."}),
    ):
        r = c.get(f"/api/plain/{name}/")
        assert (r.status_code, is_json(r), r.json()) == (status, True, body), name
        page = c.get(f"/plain/{name}/")
        assert page.status_code == status and page["Content-Type"].startswith("text/html"), name
        assert b"boom" not in r.content + page.content  # what failed goes to the log, not to the client
    # a CSRF failure: a POST without the token to a Django view under /api/, and to a page
    r = c.post("/api/plain/ok/")
    assert r.status_code == 403 and is_json(r) and r.json()["detail"].startswith("CSRF Failed: CSRF cookie")
    page = c.post("/plain/ok/")
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html") and b"CSRF" in page.content
    # with the token the same POST goes through: only the failure changed
    token = "a" * 32
    c.cookies["csrftoken"] = token
    assert c.post("/api/plain/ok/", HTTP_X_CSRFTOKEN=token).status_code == 200


def test_csrf_failures_of_the_session_api_are_json(staff_user):
    c = Client(enforce_csrf_checks=True)
    c.force_login(staff_user)
    for url in ("/api/topics/", "/api/projects/", "/api/no-such-thing/", "/api/projects/bad:slug/next/"):
        r = c.post(url, {}, content_type="application/json")
        assert r.status_code in (403, 404) and is_json(r), (url, r.status_code, r.content[:80])
    r = c.post("/api/topics/", {"name": "x"}, content_type="application/json")
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    page = c.post("/accounts/logout/")  # a page keeps Django's HTML answer
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")


def test_api_400_404_405_500_are_json(staff_user, settings, monkeypatch):
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(staff_user)
    r = api.get("/api/topics/999999/")
    assert r.status_code == 404 and is_json(r) and set(r.json()) == {"detail"}
    r = api.get("/api/no-such-thing/")
    assert r.status_code == 404 and r.json() == {"detail": "Not found."}
    r = api.delete("/api/topics/")
    assert r.status_code == 405 and is_json(r) and "DELETE" in r.json()["detail"]
    r = api.get("/api/assignments/1/submit/")
    assert r.status_code == 405 and is_json(r) and "GET" in r.json()["detail"]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100  # a form body over the limit: Django refuses it before any view
    r = api.post("/api/topics/", {"name": "x" * 500})
    assert r.status_code == 400 and is_json(r) and list(r.json()["errors"]) == ["body"]
    page = Client().post("/accounts/login/", {"username": "x" * 500})
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")

    def broken(self, request, *args, **kwargs):
        raise RuntimeError("boom: a bug in a DRF view")

    monkeypatch.setattr(TopicViewSet, "list", broken)
    r = api.get("/api/topics/")
    assert r.status_code == 500 and r.json() == {"detail": "Server error."}


def test_is_api_is_the_path_prefix():
    factory = RequestFactory()
    assert errors.is_api(factory.get("/api/topics/")) and errors.is_api(factory.get("/api/"))
    assert not errors.is_api(factory.get("/apiary/")) and not errors.is_api(factory.get("/projects/api/"))


def test_every_operation_documents_its_error_statuses():
    """One place (argora.schema.AutoSchema) documents what the shared layers answer: 400 everywhere, 403 where an
    authenticator or a permission decides, 404 where a path parameter names an object or a list is paged."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = [
        (path, method, op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]
    assert len(operations) > 20
    for route, method, op in operations:
        codes = set(op["responses"])
        assert {"400", "403"} <= codes, (method, route, codes)
        if "{" in route or any(p["name"] in ("page", "cursor") for p in op.get("parameters", [])):
            assert "404" in codes, (method, route, codes)
        assert not any(code.startswith("5") for code in codes)
    submit = schema["paths"]["/api/assignments/{id}/submit/"]["post"]["responses"]
    assert set(submit) == {"200", "400", "403", "404", "409"}  # the view's own 409 is kept
    assert submit["400"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Errors"}
    topics = schema["paths"]["/api/topics/"]["post"]["responses"]["400"]["content"]["application/json"]["schema"]
    assert {"$ref": "#/components/schemas/Errors"} in topics["anyOf"]  # or DRF's {field: [reason]}
    assert set(schema["components"]["schemas"]["Detail"]["properties"]) == {"detail"}
