"""Model annotators (issue 24, items 1-2): an LLM behind a local fake OpenAI-compatible server answers a project's
items; malformed answers, time-outs, 429s and answers the task type refuses are stored as failures with their raw
text and retried with back-off; a killed run resumes without asking twice; model answers are kept apart from the
crowd's unless included; the agreement report (with and without, per human, majority, alt-test) and its CLI."""

from __future__ import annotations

import json
import re
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from werkzeug import Response as WResponse

from annotation import model_annotators as ma
from annotation import selectors
from annotation.agreement.records import load_responses
from annotation.models import (
    Assignment,
    ModelAnnotator,
    ModelAnswer,
    ModelAnswerFailure,
    Response,
)
from argora.errors import FieldError
from tests.annotation.test_project_agreement import build_project

pytestmark = pytest.mark.django_db

NUMBER = re.compile(r"Sentence number (\d+)\.")


class FakeLLM:
    """An OpenAI-compatible ``/v1/chat/completions``: answers ``{"label": ...}`` from a table per item number, with
    scripted misbehaviour on the first asks of some items."""

    def __init__(self, labels: dict[int, str], script: dict[int, list[str]] | None = None):
        self.labels, self.script = labels, script or {}
        self.asked: dict[int, int] = {}
        self.bodies: list[dict] = []

    def __call__(self, request):
        body = json.loads(request.data)
        self.bodies.append(body)
        prompt = body["messages"][-1]["content"]
        n = int(NUMBER.search(prompt).group(1))
        k = self.asked.get(n, 0)
        self.asked[n] = k + 1
        steps = self.script.get(n, [])
        step = steps[k] if k < len(steps) else "ok"
        if step == "429":
            return WResponse(
                '{"error": "slow down"}', status=429, headers={"Retry-After": "7"}, content_type="application/json"
            )
        if step == "timeout":
            time.sleep(1.6)
        content = {"malformed": "I think it is pro, probably.", "invalid": '{"label": "maybe"}'}.get(
            step, "```json\n" + json.dumps({"label": self.labels[n]}) + "\n```"
        )
        reply = {
            "id": "x",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": {"content": [{"token": "a", "logprob": -0.1}, {"token": "b", "logprob": 0.0}]},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50},
        }
        return WResponse(json.dumps(reply), content_type="application/json")


@pytest.fixture
def llm_server(httpserver, settings):
    settings.ARGORA_LLM_BASE_URL = httpserver.url_for("/v1")
    settings.ARGORA_LLM_MODEL = "fake-7b"
    settings.ARGORA_LLM_API_KEY = "sk-test"
    settings.ARGORA_LLM_BACKOFF = (2.0, 4.0)
    settings.ARGORA_LLM_COST_PER_1K_TOKENS = 0.5
    waits: list[float] = []
    ma.set_sleep(waits.append)

    def serve(fake: FakeLLM):
        httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(fake)
        return fake

    serve.waits = waits
    yield serve
    ma.set_sleep(None)


def three_humans(n_items=6):
    base = ["pro", "con", "none", "pro", "con", "pro"] * (n_items // 6 + 1)
    base = base[:n_items]
    other = list(base)
    other[0] = "con"
    return build_project({"ann": base, "bea": base, "cid": other}, slug="stance")


def test_llm_answers_items_failures_are_stored_with_raw_text_and_retried_with_backoff(llm_server):
    project = three_humans()
    fake = llm_server(
        FakeLLM(
            dict(enumerate(["pro", "con", "none", "pro", "con", "pro"])),
            script={1: ["malformed"], 2: ["429"], 3: ["timeout"], 5: ["invalid", "invalid", "invalid"]},
        )
    )
    annotator = ma.create_annotator(project, name="fake LLM", kind="llm", options={"timeout": 1, "batch_size": 2})
    assert annotator.worker.source == "model" and annotator.prompt_version == 1

    out = ma.run(annotator.pk)

    assert out["answered"] == 5 and out["status"] == "done" and out["failed_items"] == 1
    answers = {
        a.item.payload["text"]: a
        for a in ModelAnswer.objects.filter(annotator=annotator).select_related("item", "response")
    }
    assert answers["Sentence number 1."].response.data == {"label": "con"}
    a1 = answers["Sentence number 1."]
    assert a1.attempts == 2 and a1.prompt_version == 1 and a1.model_id.startswith("llm:fake-7b@http://")
    assert a1.tokens == 50 and a1.cost == pytest.approx(0.025) and 0.9 < a1.confidence <= 1.0
    fails = {(f.item.payload["text"], f.kind) for f in ModelAnswerFailure.objects.filter(annotator=annotator)}
    assert ("Sentence number 1.", "malformed") in fails
    assert ("Sentence number 2.", "rate_limited") in fails
    assert ("Sentence number 3.", "timeout") in fails
    bad = ModelAnswerFailure.objects.filter(annotator=annotator, item__payload__text="Sentence number 5.")
    assert bad.count() == 3 and {f.kind for f in bad} == {"invalid"}  # max_attempts (3), never a label
    assert bad.first().raw == '{"label": "maybe"}' and "label: must be one of" in bad.first().error
    assert "Sentence number 5." not in answers
    malformed = ModelAnswerFailure.objects.get(annotator=annotator, kind="malformed")
    assert malformed.raw == "I think it is pro, probably."
    # back-off between passes: 2 s, then 4 s; the 429's Retry-After (7 s) is longer than the first step and wins
    assert llm_server.waits == [7.0, 4.0]
    assert fake.asked == {0: 1, 1: 2, 2: 2, 3: 2, 4: 1, 5: 3}
    assert fake.bodies[0]["model"] == "fake-7b" and "Sentence number 0." in fake.bodies[0]["messages"][-1]["content"]
    assert "pro, con, none" in fake.bodies[0]["messages"][-1]["content"]  # $labels of the prompt


def test_killed_run_resumes_without_asking_twice(llm_server):
    project = three_humans()
    fake = llm_server(FakeLLM(dict.fromkeys(range(6), "pro")))
    annotator = ma.create_annotator(project, name="resumer", kind="llm", options={"batch_size": 2})

    class Killed(BaseException):
        """What a SIGKILL leaves: no except clause runs, the row stays 'running'."""

    calls = []

    def die_after_first_batch(done, total, description=""):
        calls.append(done)
        if done >= 2:
            raise Killed

    with pytest.raises(Killed):
        ma.run(annotator.pk, progress=die_after_first_batch)
    annotator.refresh_from_db()
    assert annotator.status == "running" and ModelAnswer.objects.filter(annotator=annotator).count() == 2
    out = ma.run(annotator.pk)  # the redelivered task
    assert out["answered"] == 6
    assert fake.asked == dict.fromkeys(range(6), 1)  # nobody asked twice
    out = ma.run(annotator.pk)  # a third delivery asks nothing
    assert sum(fake.asked.values()) == 6 and out["answered"] == 6


def test_model_answers_are_kept_apart_unless_included(llm_server):
    project = three_humans()
    llm_server(FakeLLM(dict.fromkeys(range(6), "none")))
    annotator = ma.create_annotator(project, name="apart", kind="llm")
    ma.run(annotator.pk)
    assert Assignment.objects.filter(worker=annotator.worker, status="model").count() == 1
    human_n = Response.objects.filter(assignment__status__in=Assignment.DONE).count()
    assert selectors.counted_responses(project).count() == human_n == 18
    assert all(len(v) == 3 for v in selectors.item_responses(project).values())
    assert len(load_responses(project)) == 18  # the agreement table reads humans only
    progress = selectors.project_progress(project)
    assert progress["done"] == 18 and all(w["source"] != "model" for w in progress["workers"])
    ma.set_included(annotator, True)
    assert selectors.counted_responses(project).count() == 24
    assert all(len(v) == 4 for v in selectors.item_responses(project).values())
    assert selectors.counted_responses(project, include_models=False).count() == 18


def test_prompt_versions_and_bad_input_name_the_field(llm_server):
    project = three_humans()
    fake = llm_server(FakeLLM(dict.fromkeys(range(6), "pro")))
    with pytest.raises(FieldError) as err:
        ma.create_annotator(project, name="x", kind="llm", prompt_template="Say $nonsense")
    assert err.value.field == "prompt_template" and "$nonsense" in err.value.reason
    with pytest.raises(FieldError) as err:
        ma.create_annotator(project, name="x", kind="llm", options={"temperature": 9})
    assert err.value.field == "temperature"
    with pytest.raises(FieldError) as err:
        ma.create_annotator(project, name="x", kind="registry", options={"version": 1})
    assert err.value.field == "kind"  # no registry model answers sentence labels
    annotator = ma.create_annotator(project, name="x", kind="llm")
    with pytest.raises(FieldError) as err:
        ma.create_annotator(project, name="x", kind="llm")
    assert err.value.field == "name"
    ma.update_prompt(annotator, "Label it. $text Labels: $labels. Reply as $format")
    annotator.refresh_from_db()
    assert annotator.prompt_version == 2 and annotator.prompt_versions.count() == 2
    ma.run(annotator.pk)
    assert set(ModelAnswer.objects.filter(annotator=annotator).values_list("prompt_version", flat=True)) == {2}
    assert fake.bodies[0]["messages"][-1]["content"].startswith("Label it. Sentence number")


def test_report_with_and_without_per_human_majority_and_alt_test(llm_server):
    project = three_humans(n_items=36)
    truth = {i: ["pro", "con", "none", "pro", "con", "pro"][i % 6] for i in range(36)}
    llm_server(FakeLLM(truth))
    annotator = ma.create_annotator(project, name="good", kind="llm", options={"batch_size": 12})
    ma.run(annotator.pk)
    [rep] = ma.report(project)
    assert rep["n_answers"] == 36 and rep["n_human_coders"] == 3
    assert rep["without"]["n_coders"] == 3 and rep["with"]["n_coders"] == 4
    assert rep["without"]["n_units"] == rep["with"]["n_units"] == 36
    assert rep["with"]["alpha"] > rep["without"]["alpha"]  # it agrees with the majority everywhere
    per = {r["coder"]: r for r in rep["per_human"]}
    assert len(per) == 3 and all(r["n"] == 36 for r in per.values())
    assert sorted(round(r["accuracy"], 4) for r in per.values()) == [round(35 / 36, 4), 1.0, 1.0]
    assert rep["majority"]["accuracy"] == 1.0 and rep["majority"]["n"] == 36
    alt = rep["alt_test"]
    assert alt["passed"] is True and alt["winning_rate"] == 1.0 and alt["n_tested"] == 3
    assert alt["epsilon"] == 0.2 and alt["scoring"] == "accuracy"
    # too few shared instances: no verdict, and the report says what is missing
    [small] = ma.report(project, min_instances=40)
    assert small["alt_test"]["passed"] is None and small["alt_test"]["problems"]

    out = StringIO()
    call_command("model_annotators", "report", project.slug, "--json", "--epsilon", "0.1", stdout=out)
    data = json.loads(out.getvalue())
    assert data["models"]["good"]["alt_test"]["winning_rate"] == 1.0
    assert data["models"]["good"]["alt_test"]["epsilon"] == 0.1
    with pytest.raises(CommandError) as err:
        call_command("model_annotators", "report", project.slug, "--epsilon", "2")
    assert "epsilon" in str(err.value)
    assert ModelAnnotator.objects.get(pk=annotator.pk).status == "done"


def test_admin_pages_of_model_annotators_open(llm_server, admin_user_obj, client):
    from django.contrib import admin
    from django.urls import reverse

    project = three_humans()
    llm_server(FakeLLM(dict.fromkeys(range(6), "pro"), script={0: ["malformed"]}))
    annotator = ma.create_annotator(project, name="adm", kind="llm", options={"max_attempts": 1})
    ma.run(annotator.pk)
    client.force_login(admin_user_obj)
    objects = {
        ModelAnnotator: annotator,
        ModelAnswer: ModelAnswer.objects.first(),
        ModelAnswerFailure: ModelAnswerFailure.objects.first(),
    }
    for model, obj in objects.items():
        assert model in admin.site._registry
        info = (model._meta.app_label, model._meta.model_name)
        for url in (reverse("admin:%s_%s_changelist" % info), reverse("admin:%s_%s_change" % info, args=[obj.pk])):
            assert client.get(url).status_code == 200, url
    page = client.get(reverse("admin:annotation_modelanswerfailure_changelist")).content.decode()
    assert "malformed" in page.lower()
