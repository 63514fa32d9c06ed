"""An LLM annotator is not a way out of the server (SECURITY.md, "Outbound calls"): a base URL that reaches the
server's own networks -- in any spelling, or through a name -- is refused on write (the service, the studio form and
the CLI name ``base_url``) and again at call time (options written straight to the database), unless the operator
allowed it (``ARGORA_OUTBOUND_ALLOWED_HOSTS``), and then it works end to end; ``api_key_env`` must start with
``ARGORA_LLM_KEY_PREFIX``; the operator's key goes only to the operator's endpoint; redirects are not followed; a
failed attempt keeps a 500-character excerpt of the reply, shown escaped. The far end is a local fake
(pytest-httpserver), never the network."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from werkzeug import Response as WResponse

from annotation import model_annotators as ma
from annotation.models import ModelAnnotator, ModelAnswer, ModelAnswerFailure
from argora.errors import FieldError
from tests.annotation import test_model_annotators
from tests.annotation.test_model_annotators import FakeLLM, three_humans
from tests.annotation.test_studio_models import errors_of, llm_post

pytestmark = pytest.mark.django_db

llm_server = test_model_annotators.llm_server  # the fake OpenAI-compatible server; ARGORA_LLM_BASE_URL points at it

LABELS = dict(enumerate(["pro", "con", "none", "pro", "con", "pro"]))


class Recording(FakeLLM):
    """The fake LLM, keeping the headers of every request."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.headers: list[dict] = []

    def __call__(self, request):
        self.headers.append(dict(request.headers))
        return super().__call__(request)


def internal_urls(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/v1",
        "http://169.254.169.254/v1",
        "http://10.0.0.1/v1",
        "http://[::1]/v1",
        "http://localhost/v1",
        "http://2130706433/",
        f"http://2130706433:{port}/v1",
    ]


@pytest.fixture
def superclient(client, admin_user_obj):
    client.force_login(admin_user_obj)
    return client


def test_internal_base_urls_are_refused_on_write_naming_the_field(llm_server, httpserver, superclient, settings):
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = []
    project = three_humans()
    llm_server(FakeLLM(LABELS))
    new = reverse("annotation:studio-model-new", args=[project.slug])
    for base in internal_urls(httpserver.port) + ["http://user:pw@93.184.216.34/v1"]:
        with pytest.raises(FieldError) as err:
            ma.create_annotator(project, name="inside", kind="llm", options={"base_url": base})
        assert err.value.field == "base_url", base
        resp = superclient.post(new, llm_post(base_url=base))
        assert resp.status_code == 400, base
        assert "own networks" in errors_of(resp.content.decode(), "base_url") or "user name or password" in errors_of(
            resp.content.decode(), "base_url"
        ), base
        with pytest.raises(CommandError, match="base_url: "):
            call_command("model_annotators", "add-llm", project.slug, "inside", "--base-url", base)
    assert not ModelAnnotator.objects.exists()
    assert httpserver.log == []


@pytest.mark.parametrize(
    "allowed, base",
    [
        (["127.0.0.1"], "http://127.0.0.1:{port}/v1"),
        (["127.0.0.0/8"], "http://2130706433:{port}/v1"),  # the decimal spelling of an allowed address
        (["localhost"], "http://localhost:{port}/v1"),  # an allowed host name
    ],
)
def test_what_the_operator_allowed_works_end_to_end(llm_server, httpserver, settings, allowed, base):
    project = three_humans()
    fake = llm_server(Recording(LABELS))
    settings.ARGORA_LLM_BASE_URL = "http://llm.invalid/v1"  # the operator's endpoint is elsewhere: nothing trusted
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = allowed
    base = base.format(port=httpserver.port)
    annotator = ma.create_annotator(project, name="allowed", kind="llm", options={"base_url": base})
    out = ma.run(annotator.pk)
    assert out["answered"] == 6 and out["status"] == "done"
    assert ModelAnswer.objects.get(annotator=annotator, item__payload__text="Sentence number 1.").response.data == {
        "label": "con"
    }
    assert ma.model_id(annotator).startswith(f"llm:fake-7b@{base}")
    assert all("Authorization" not in h for h in fake.headers)  # ARGORA_LLM_API_KEY goes to the operator's only


def test_refused_at_call_time_when_the_database_says_otherwise(llm_server, httpserver, settings):
    project = three_humans()
    fake = llm_server(FakeLLM(LABELS))
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    base = f"http://127.0.0.1:{httpserver.port}/v1"
    annotator = ma.create_annotator(project, name="later", kind="llm", options={"base_url": base})
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = []  # the operator withdrew it
    for options in (
        {"base_url": base},
        {"base_url": "http://169.254.169.254/v1"},
        {"base_url": f"http://localhost:{httpserver.port}/v1", "api_key_env": "DJANGO_SECRET_KEY"},
    ):
        ModelAnnotator.objects.filter(pk=annotator.pk).update(options=options, status="idle")
        with pytest.raises(FieldError) as err:
            ma.run(annotator.pk)
        annotator.refresh_from_db()
        assert err.value.field == ("api_key_env" if "api_key_env" in options else "base_url")
        assert annotator.status == "failed" and err.value.field in annotator.error
    assert fake.bodies == [] and not ModelAnswerFailure.objects.exists() and not ModelAnswer.objects.exists()


def test_api_key_env_must_start_with_the_prefix(llm_server, superclient, monkeypatch, settings):
    project = three_humans()
    fake = llm_server(Recording(LABELS))
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-server-secret")
    monkeypatch.setenv("ARGORA_LLM_KEY_TEAM", "sk-team")
    new = reverse("annotation:studio-model-new", args=[project.slug])
    for name in ("DJANGO_SECRET_KEY", "PROLIFIC_API_TOKEN", "AWS_SECRET_ACCESS_KEY", "ARGORA_LLM_KEY_"):
        with pytest.raises(FieldError) as err:
            ma.create_annotator(project, name="k", kind="llm", options={"api_key_env": name})
        assert err.value.field == "api_key_env" and "ARGORA_LLM_KEY_" in err.value.reason
        resp = superclient.post(new, llm_post(api_key_env=name))
        assert resp.status_code == 400 and "starts with ARGORA_LLM_KEY_" in errors_of(
            resp.content.decode(), "api_key_env"
        )
    assert not ModelAnnotator.objects.exists()

    annotator = ma.create_annotator(project, name="k", kind="llm", options={"api_key_env": "ARGORA_LLM_KEY_TEAM"})
    ma.run(annotator.pk)
    assert len(fake.headers) == 6 and {h["Authorization"] for h in fake.headers} == {"Bearer sk-team"}
    settings.ARGORA_LLM_KEY_PREFIX = "ARGORA_OTHER_"  # checked again at call time
    ModelAnswer.objects.filter(annotator=annotator).delete()
    with pytest.raises(FieldError, match="api_key_env"):
        ma.run(annotator.pk)
    assert len(fake.headers) == 6


def test_the_operators_endpoint_gets_the_operators_key(llm_server):
    project = three_humans()
    fake = llm_server(Recording(LABELS))
    annotator = ma.create_annotator(project, name="default", kind="llm")
    ma.run(annotator.pk)
    assert {h["Authorization"] for h in fake.headers} == {"Bearer sk-test"}


def test_a_redirect_is_a_failure_and_not_followed(llm_server, httpserver):
    """``llm_server``: the settings of the fake's fixture; the handler is this test's."""
    project = three_humans()
    inside = httpserver.url_for("/inside")
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_response(
        WResponse("", status=307, headers={"Location": inside})
    )
    httpserver.expect_request("/inside").respond_with_data("internal")
    annotator = ma.create_annotator(project, name="moved", kind="llm", options={"max_attempts": 1})
    ma.run(annotator.pk)
    kinds = set(ModelAnswerFailure.objects.filter(annotator=annotator).values_list("kind", flat=True))
    assert kinds == {"http"} and ModelAnswerFailure.objects.count() == 6
    assert "redirects are not followed" in ModelAnswerFailure.objects.first().error
    assert {r.path for r, _ in httpserver.log} == {"/v1/chat/completions"}


def test_a_long_reply_keeps_an_excerpt_shown_escaped(llm_server, httpserver, superclient):
    project = three_humans()
    reply = ("<script>alert('x')</script>" + "A" * 20000)[:20000]
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_data(reply, status=500)
    annotator = ma.create_annotator(project, name="chatty", kind="llm", options={"max_attempts": 1})
    ma.run(annotator.pk)
    failure = ModelAnswerFailure.objects.filter(annotator=annotator).first()
    assert failure.kind == "http" and failure.raw == reply[: ma.RAW_EXCERPT] and len(failure.raw) == 500
    assert "a reply of 20000 characters: its first 500 are kept" in failure.error
    page = superclient.get(reverse("annotation:studio-model-failures", args=[project.slug, annotator.pk]))
    text = page.content.decode()
    assert page.status_code == 200 and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;AAA" in text
    assert "<script>alert" not in text and "A" * 501 not in text
    admin_page = superclient.get(reverse("admin:annotation_modelanswerfailure_change", args=[failure.pk]))
    assert admin_page.status_code == 200 and "<script>alert" not in admin_page.content.decode()
    assert "&lt;script&gt;alert" in admin_page.content.decode()
