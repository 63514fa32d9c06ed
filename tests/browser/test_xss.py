"""Stored script injection, in headless Chromium: a Researcher puts script into every text they can set -- the
guidelines through the API, the admin and the studio (its live preview too), the project's name, labels and items,
the consent text, training explanations, the screened-out message, the exit survey -- and a row stored raw before the
sanitiser existed; then the worker journey (invite -> consent -> instructions -> training -> feedback -> the HIT ->
survey -> done, and a worker screened out), the staff pages (studio, project pages, dashboards, the admin's change
forms, the API docs) and the anonymous pages are opened. No payload runs (``window.__xss`` stays undefined, no dialog
opens), none lands in the DOM as a handler, a ``javascript:`` URL or a script without the nonce, and no page reports a
Content-Security-Policy violation or a script error: our own scripts still run under the policy (the HIT submits,
the live preview updates, Swagger UI renders)."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect
from rest_framework.test import APIClient

from annotation import phases, services
from annotation.agreement.snapshots import store_snapshots
from annotation.models import GoldItem, Participation, Project, Response, StudyPhases, Worker
from argora.celery import app
from argora.progress import write_progress
from argora.roles import RESEARCHER_GROUP

# what runs in the browser is what the server rendered, whatever engine stored the text
pytestmark = pytest.mark.one_database

RUN = "window.__xss=1"
# (the images have alt text: the sanitised ones stay on the pages, which axe-core checks -- tests/browser/conftest.py)
PAYLOADS = [
    f"<img src=x alt=x onerror={RUN}>",
    f"<script>{RUN}</script>",
    f"<svg onload={RUN}></svg>",
    f'<a href="javascript:{RUN}">a link</a>',
    f'"><script>{RUN}</script>',
    f"'><img src=x alt=x onerror={RUN}>",
    f'<iframe src="javascript:{RUN}"></iframe>',
    f"<details open ontoggle={RUN}>x</details>",
    "</textarea><script>alert(1)</script>",
    "<img src=x alt=x onerror=alert(document.domain)>",
    f"<math><mtext><table><mglyph><style><img src=x alt=x onerror={RUN}>",
]
HTML = "<p>Label each sentence.</p>" + "".join(PAYLOADS)
MARKDOWN = f"## About\n\n[a link](javascript:{RUN}) and <b>bold</b>\n\n" + "\n\n".join(PAYLOADS)
NAME = f'Study "><script>{RUN}</script><img src=x onerror={RUN}>'
LABELS = [f'pro"><img src=x onerror={RUN}>', f"con<script>{RUN}</script>", "none"]
TEXTS = [
    f"Wind farms cut emissions.<svg onload={RUN}>",
    f'Turbines kill birds."><script>{RUN}</script>',
    f"The farm has 12 turbines.<img src=x onerror={RUN}>",
]
SURVEY = [
    {
        "name": "clarity",
        "label": f"Clear?<script>{RUN}</script>",
        "kind": "likert",
        "scale": [f"No<img src=x onerror={RUN}>", f'Yes"><svg onload={RUN}>'],
        "required": True,
        "help": f"<img src=x onerror={RUN}>",
    },
    {"name": "comments", "label": f'Anything else?"><script>{RUN}</script>', "kind": "text"},
]

WATCH = """(() => {
  window.__csp = [];
  document.addEventListener("securitypolicyviolation",
    (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
})();"""
FIND_INJECTED = """() => {
  const bad = [];
  for (const el of document.querySelectorAll("*")) {
    for (const a of el.attributes) {
      if (/^on/i.test(a.name) || /^\\s*javascript:/i.test(a.value)) bad.push(`${el.tagName} ${a.name}=${a.value}`);
    }
  }
  for (const s of document.querySelectorAll("script")) {
    if (!s.src && s.type !== "application/json" && !s.nonce) bad.push(`script ${s.textContent.slice(0, 60)}`);
  }
  for (const f of document.querySelectorAll("iframe")) bad.push(`iframe ${f.src}`);
  return bad;
}"""


def assert_clean(html: str) -> None:
    """No tag of ``html`` is a script, a frame or an SVG, or has a handler or a ``javascript:`` URL (text that reads
    like one is escaped, ``&lt;script&gt;``, and harmless)."""
    tags = re.findall(r"<[a-z][^>]*>", html, flags=re.IGNORECASE)
    assert tags, html
    bad = [
        t
        for t in tags
        if re.match(r"<(script|iframe|svg|math|style|object|embed)", t, flags=re.IGNORECASE)
        or re.search(r"\son[a-z]+\s*=|javascript:", t, flags=re.IGNORECASE)
    ]
    assert bad == [], html


class Watch:
    """What a page did that it must not: a payload ran (``window.__xss``, a dialog), landed in the DOM, a CSP
    violation (the event and Chromium's console message), an uncaught script error."""

    def __init__(self, page):
        self.page, self.dialogs, self.console, self.errors = page, [], [], []
        page.context.add_init_script(WATCH)
        page.on("dialog", self._dialog)
        page.on("console", lambda m: self.console.append(m.text) if "Content Security Policy" in m.text else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def check(self, where: str) -> None:
        self.page.wait_for_load_state("load")
        state = self.page.evaluate("() => ({xss: window.__xss, csp: window.__csp || null})")
        assert state["xss"] is None, f"{where}: a payload ran"
        assert state["csp"] == [], f"{where}: CSP violations {state['csp']}"
        assert self.page.evaluate(FIND_INJECTED) == [], where
        assert (self.dialogs, self.console, self.errors) == ([], [], []), where


@pytest.fixture
def watch(page):
    return Watch(page)


def log_in(page, live_server, user, password):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    expect(page.locator(".who")).to_contain_text(user.username)


def study() -> Project:
    """An active study written with script everywhere (services: what the importers and the studio call), whose
    guidelines row is then written raw, as a row stored before the sanitiser existed."""
    project = services.create_project(
        name=NAME,
        task_type="sentence_label",
        config={"labels": LABELS},
        guidelines=HTML,
        assignments_per_item=1,
        items_per_hit=3,
        gold_min_items=0,
        status=Project.Status.ACTIVE,
    )
    assert_clean(project.guidelines)  # the model sanitised it
    topic = f"<img src=x onerror={RUN}>"
    gold = [
        {
            "payload": {"text": f"Solar panels.<img src=x onerror={RUN}>", "topic": topic},
            "expected": {"label": "none"},
            "explanation": MARKDOWN,
            "training": True,
        }
    ]
    services.add_items(project, [{"text": t, "topic": topic} for t in TEXTS], gold=gold)
    services.build_hits(project)
    phases.configure(
        project,
        {
            "consent_required": True,
            "consent_text": MARKDOWN,
            "instructions_required": True,
            "training_enabled": True,
            "pass_threshold": 1.0,
            "max_attempts": 1,
            "screened_out_message": MARKDOWN,
            "survey_enabled": True,
            "survey_questions": SURVEY,
        },
    )
    Project.objects.filter(pk=project.pk).update(guidelines=HTML)  # stored before the fix: the filter cleans it
    return Project.objects.get(pk=project.pk)


def through_consent_and_instructions(page, live_server, project, watch):
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(r"/study/consent/$"))
    expect(page.locator("#consent-text h2")).to_have_text("About")
    expect(page.locator("#consent-text b")).to_have_text("bold")
    watch.check("consent")
    page.locator("#consent-box").check()
    page.locator("#consent-continue").click()
    expect(page).to_have_url(re.compile(r"/study/instructions/$"))
    expect(page.locator("#instructions .guidelines")).to_contain_text("Label each sentence.")
    watch.check("instructions")
    page.locator("#instructions-read").click()
    expect(page).to_have_url(re.compile(r"/study/training/$"))
    expect(page.locator(".hit-item")).to_be_focused()  # hit.js ran
    watch.check("training")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_no_researcher_text_runs_on_the_worker_journey(live_server, page, watch):
    project = study()
    through_consent_and_instructions(page, live_server, project, watch)
    page.locator(".hit-item input[value=none]").check()
    page.locator("#hit-submit").click()
    expect(page.locator("#verdict-title")).to_have_text("Right!")
    expect(page.locator("#explanation")).to_contain_text("About")  # plain text: the Markdown as written, escaped
    expect(page.locator("#explanation")).to_contain_text(f"<script>{RUN}</script>")
    watch.check("training feedback")
    page.locator("#training-continue").click()
    expect(page.locator("#result-title")).to_contain_text("You qualified")
    watch.check("result")
    page.locator("#start-task").click()

    # the HIT: labels, texts and topics with script in them are plain text; the page still submits
    expect(page.locator(".hit-item")).to_have_count(3)
    expect(page.locator(".hit-item .sentence", has_text="<svg onload=")).to_have_count(1)
    expect(page.locator(".hit-item").first.locator("label.choice").first).to_contain_text(LABELS[0])
    watch.check("HIT")
    page.locator("#instructions summary").click()
    watch.check("HIT instructions")
    expected = {}
    for k, label in enumerate(LABELS):
        item = page.locator(".hit-item").nth(k)
        item.locator("input[type=radio]").nth(k).check()
        expected[item.locator(".sentence").text_content()] = label
    page.locator("#hit-submit").click()
    expect(page).to_have_url(re.compile(r"/study/survey/\?finished=1$"))
    expect(page.locator(".survey-label").first).to_contain_text(f"Clear?<script>{RUN}</script>")
    watch.check("survey")
    page.locator("input[name=q-clarity][value='2']").check()
    page.locator("#q-comments").fill(f"<img src=x onerror={RUN}>")
    page.locator("#survey-submit").click()
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/done/\?finished=1$"))
    watch.check("done")
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    stored = {r.item.payload["text"]: r.data["label"] for r in Response.objects.filter(assignment__worker=worker)}
    assert stored == expected and set(stored) == set(TEXTS)  # the labels went through as the Researcher wrote them
    assert Participation.objects.get(worker=worker).survey["comments"] == f"<img src=x onerror={RUN}>"
    page.goto(f"{live_server.url}/work/{project.slug}/instructions/")
    watch.check("instructions page")
    page.goto(f"{live_server.url}/work/")
    watch.check("my projects")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.axe_skip("/api/docs/", reason="Swagger UI (drf-spectacular-sidecar's page), not our template")
def test_no_researcher_text_runs_for_a_screened_out_worker_or_an_anonymous_visitor(
    live_server, page, watch, new_context
):
    project = study()
    through_consent_and_instructions(page, live_server, project, watch)
    page.locator(".hit-item input[type=radio]").first.check()  # wrong
    page.locator("#hit-submit").click()
    expect(page.locator("#verdict-title")).to_have_text("Not quite.")
    watch.check("feedback after a miss")
    page.locator("#training-continue").click()
    expect(page).to_have_url(re.compile(r"/study/screened-out/$"))
    expect(page.locator("#screened-out-message h2")).to_have_text("About")
    watch.check("screened out")

    anonymous = new_context()
    other = anonymous.new_page()
    other_watch = Watch(other)
    try:
        preview = f"/mturk/external/{project.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE"
        shows = {
            "/": "#main, main",
            "/accounts/login/": "input[name=username]",
            preview: "#instructions .guidelines >> text=Label each sentence.",  # the raw row, cleaned
            "/api/docs/": ".swagger-ui .info .title >> text=Argora API",
        }  # Swagger UI's script ran
        for path, what in shows.items():
            other.goto(f"{live_server.url}{path}")
            expect(other.locator(what).first).to_be_attached()
            other_watch.check(path)
    finally:
        anonymous.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.axe_skip("/api/docs/", reason="Swagger UI (drf-spectacular-sidecar's page), not our template")
def test_researcher_writes_are_sanitised_and_no_staff_page_runs_them(live_server, page, watch, django_user_model):
    researcher = django_user_model.objects.create_user("researcher", password="pw-research-123")
    researcher.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    root = django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")
    # 1. the API (POST /api/projects/): stored sanitised
    api = APIClient()
    api.force_authenticate(researcher)
    resp = api.post(
        "/api/projects/",
        {"name": NAME, "task_type": "sentence_label", "guidelines": HTML, "config": {"labels": LABELS}},
        format="json",
    )
    assert resp.status_code == 201, resp.content
    project = Project.objects.get(slug=resp.json()["slug"])
    assert "Label each sentence." in project.guidelines
    assert_clean(project.guidelines)
    services.add_items(
        project,
        [{"text": t, "topic": "wind"} for t in TEXTS],
        gold=[{"payload": {"text": "Solar.", "topic": "wind"}, "expected": {"label": "none"}, "explanation": "first"}],
    )
    services.build_hits(project)
    services.set_project_status(project, Project.Status.ACTIVE)
    worker = services.worker_for_external_id("xss-local", source="local")
    assignment = services.reserve_next_assignment(project, worker)
    services.submit_assignment(
        assignment,
        worker,
        {str(item.pk): {"label": LABELS[0]} for item in services.assignment_items(assignment)},
        feedback=f"<script>{RUN}</script>",
    )
    store_snapshots(project)
    log_in(page, live_server, root, "pw-root-123")

    # 2. the admin's change form: the guidelines textarea shows the text, the save stores it sanitised
    page.goto(f"{live_server.url}/admin/annotation/project/{project.pk}/change/")
    watch.check("admin change form")
    page.locator("#id_guidelines").fill("<p>from the admin</p>" + HTML)
    page.locator("input[name=_continue]").click()
    expect(page.locator(".messagelist")).to_be_visible()
    watch.check("admin change form, saved")
    project.refresh_from_db()
    assert "from the admin" in project.guidelines
    assert_clean(project.guidelines)

    # 3. the studio: the live preview (innerHTML of what the server sanitised), then the save
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/settings/")
    watch.check("studio settings")
    page.locator("#id_guidelines").fill("from the studio\n\n" + MARKDOWN)
    expect(page.locator("#guidelines-preview")).to_contain_text("from the studio")
    expect(page.locator("#guidelines-preview h2")).to_have_text("About")
    watch.check("studio settings preview")
    page.locator("#save-settings").click()
    expect(page).to_have_url(re.compile(rf"/studio/projects/{project.slug}/$"))
    watch.check("studio project page")
    project.refresh_from_db()
    assert "from the studio" in project.guidelines and "<h2>About</h2>" in project.guidelines
    assert_clean(project.guidelines)

    # 4. the studio's study phases: texts with script, training explanations, survey questions
    gold = GoldItem.objects.get(item__project=project)
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/phases/")
    watch.check("studio phases")
    page.locator("#id_consent_required").check()
    page.locator("#id_consent_text").fill(MARKDOWN)
    page.locator("#id_screened_out_message").fill(MARKDOWN)
    page.locator("#id_survey_enabled").check()
    page.locator("#id_survey_questions").fill(json.dumps(SURVEY))
    page.locator(f"#training-{gold.item_id}").check()
    page.locator("#id_training_enabled").check()
    page.locator(f"textarea[name=explanation_{gold.item_id}]").fill(MARKDOWN)
    page.locator("#save-phases").click()
    expect(page).to_have_url(re.compile(rf"/studio/projects/{project.slug}/#phases$"))
    watch.check("studio project page with phases")
    cfg = StudyPhases.objects.get(project=project)
    assert cfg.consent_text.replace("\r\n", "\n") == MARKDOWN  # stored as written: shown through markdown_html
    assert cfg.survey_questions[0]["label"] == SURVEY[0]["label"].strip()

    # 5. every staff page of the project, with the row stored raw (before the fix) too
    Project.objects.filter(pk=project.pk).update(guidelines=HTML)
    studio_page = f"/studio/projects/{project.slug}"
    for path in (
        "/studio/",
        "/studio/new/",
        f"{studio_page}/",
        f"{studio_page}/settings/",
        f"{studio_page}/phases/",
        "/projects/",
        f"/projects/{project.slug}/progress/",
        "/dashboards/",
        f"/projects/{project.slug}/agreement/",
        f"/projects/{project.slug}/agreement/items/",
        f"/work/{project.slug}/instructions/",
        f"/admin/annotation/project/{project.pk}/change/",
        "/admin/annotation/project/",
        f"/admin/annotation/studyphases/{project.pk}/change/",
        f"/admin/annotation/item/{gold.item_id}/change/",
        "/admin/",
        "/jobs/",
        "/api/docs/",
    ):
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        watch.check(path)
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Argora API")
    # a job page: its inline script (with the nonce) follows the job
    task_id = str(uuid.uuid4())
    app.backend.store_result(task_id, {"done": 1, "total": 4, "percent": 25.0}, "PROGRESS")
    write_progress(task_id, {"done": 1, "total": 4, "description": f"<script>{RUN}</script>", "percent": 25.0})
    page.goto(f"{live_server.url}/jobs/{task_id}/")
    write_progress(task_id, {"done": 3, "total": 4, "description": f"<img src=x onerror={RUN}>", "percent": 75.0})
    expect(page.locator("#job-desc")).to_contain_text("<img src=x onerror=")  # the poll ran, textContent
    watch.check("job page")
