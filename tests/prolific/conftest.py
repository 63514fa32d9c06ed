"""A local fake Prolific API (pytest-httpserver) and a small sentence_label project.

The fake answers the request and response shapes of Prolific's API reference (docs.prolific.com/api-reference):
studies (create, list, retrieve, PATCH places, transition PUBLISH / PAUSE / START / STOP, study-cost-calculator),
submissions (list with ``_links.next`` pages, retrieve with ``bonus_payments``, bulk-approve, transition REJECT with
message >= 100 characters and a rejection category), bonuses (set up from ``csv_bonuses``, pay a bulk record) and hooks
(secrets, subscriptions with ``X-Hook-Secret``, confirmation). It keeps state, records every call (``fake.calls``)
and can fail a call on purpose (``fake.fail``): 401, 429 with ``Retry-After``, 5xx before or after doing the work.
No test touches the network.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import re
import time
from dataclasses import dataclass

import pytest
from werkzeug import Response

from annotation.models import Project
from prolific import client as prolific_client
from prolific.models import ProlificStudy
from tests.factories import ProjectFactory

TOKEN = "test-token-prolific"
SECRET = "hook-secret-for-tests"
STUDY_ID = "60f6acb180a7b59ac0621f9e"
REJECT_CATEGORIES = {
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
}
CHANGING = ("POST", "PATCH", "PUT", "DELETE")
TEXTS = [
    "Nuclear power plants emit almost no carbon dioxide while they run.",
    "Nuclear waste stays dangerous for thousands of years.",
    "The plant in the valley opened in 1975.",
    "Modern reactors are among the safest ways to produce electricity.",
]


@dataclass
class Failure:
    method: str
    path: re.Pattern
    status: int
    times: int
    headers: dict
    after: bool  # do the work, then answer the error (the answer got lost)


def _json(data, status=200, headers=None):
    return Response(json.dumps(data), status=status, headers=headers or {}, content_type="application/json")


def _error(status, detail, title="Bad Request"):
    return _json({"error": {"status": status, "title": title, "detail": detail}}, status)


class FakeProlific:
    def __init__(self, server):
        self.server = server
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.bulk_bonuses: dict[str, dict] = {}
        self.subscriptions: dict[str, dict] = {}
        self.secrets: list[dict] = []
        self.calls: list[dict] = []
        self.failures: list[Failure] = []
        self.paid: list[str] = []
        self.ids = (f"{n:024x}" for n in itertools.count(0x64A000000000000000000001))
        self.next_study_id = STUDY_ID

    # --- set-up helpers for tests ------------------------------------------------------------
    def fail(
        self,
        method: str,
        path: str,
        status: int,
        *,
        times: int = 1,
        retry_after: str | None = None,
        after: bool = False,
    ):
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.failures.append(Failure(method, re.compile(path), status, times, headers, after))

    def add_submission(
        self, pid: str, session_id: str | None = None, *, status: str = "ACTIVE", study_id: str = STUDY_ID
    ) -> dict:
        sid = session_id or next(self.ids)
        self.submissions[sid] = {
            "id": sid,
            "participant_id": pid,
            "study_id": study_id,
            "status": status,
            "started_at": "2026-05-01T12:00:00.000000Z",
            "completed_at": None,
            "entered_code": None,
            "bonus_payments": [],
        }
        return self.submissions[sid]

    def set_status(self, sid: str, status: str):
        self.submissions[sid]["status"] = status

    def changing_calls(self) -> list[str]:
        return [
            f"{c['method']} {c['path']}"
            for c in self.calls
            if c["method"] in CHANGING and not c["path"].endswith("study-cost-calculator/")
        ]

    def paths(self, method: str | None = None) -> list[str]:
        return [c["path"] for c in self.calls if method is None or c["method"] == method]

    # --- the API -------------------------------------------------------------------------------
    def __call__(self, request):
        path = request.path[len("/api/v1/") :]
        body = request.get_json(silent=True) if request.data else None
        self.calls.append(
            {
                "method": request.method,
                "path": path,
                "query": dict(request.args),
                "body": body,
                "auth": request.headers.get("Authorization", ""),
            }
        )
        if request.headers.get("Authorization") != f"Token {TOKEN}":
            return _error(401, "Invalid token.", "Unauthorized")
        for failure in self.failures:
            if failure.times > 0 and failure.method == request.method and failure.path.search(path):
                failure.times -= 1
                if failure.after:
                    self.route(request.method, path, body, request)
                return _json(
                    {"error": {"status": failure.status, "title": "Error", "detail": "injected"}},
                    failure.status,
                    failure.headers,
                )
        return self.route(request.method, path, body, request)

    def route(self, method, path, body, request):
        body = body or {}
        if path == "studies/" and method == "POST":
            return self.create_study(body)
        if path == "studies/" and method == "GET":
            return _json({"results": list(self.studies.values()), "meta": {"count": len(self.studies)}})
        if path == "study-cost-calculator/" and method == "POST":
            total = round(float(body["reward"]) * float(body["total_available_places"]) * 1.4, 2)
            return _json({"total_cost": total})
        m = re.fullmatch(r"studies/(\w+)/(transition/)?", path)
        if m:
            study = self.studies.get(m.group(1))
            if study is None:
                return _error(404, "Not found.", "Not Found")
            if m.group(2):
                return self.transition_study(study, body.get("action"))
            if method == "PATCH":
                places = int(body.get("total_available_places", study["total_available_places"]))
                if study["status"] != "UNPUBLISHED" and places < study["total_available_places"]:
                    return _error(400, {"total_available_places": ["You cannot decrease the places."]})
                study["total_available_places"] = places
            return _json(study)
        if path == "submissions/" and method == "GET":
            return self.list_submissions(request)
        if path == "submissions/bulk-approve/" and method == "POST":
            for sid in body.get("submission_ids", []):
                if self.submissions.get(sid, {}).get("status") == "AWAITING REVIEW":
                    self.submissions[sid]["status"] = "APPROVED"
            return _json("Bulk approve in progress")
        if path == "submissions/bonus-payments/" and method == "POST":
            return self.set_up_bonuses(body)
        m = re.fullmatch(r"submissions/(\w+)/(transition/)?", path)
        if m:
            sub = self.submissions.get(m.group(1))
            if sub is None:
                return _error(404, "Not found.", "Not Found")
            if m.group(2):
                return self.transition_submission(sub, body)
            detail = {k: v for k, v in sub.items() if k != "participant_id"}
            return _json(dict(detail, participant=sub["participant_id"]))
        m = re.fullmatch(r"bulk-bonus-payments/(\w+)/pay/", path)
        if m and method == "POST":
            bulk = self.bulk_bonuses.get(m.group(1))
            if bulk is None:
                return _error(404, "Not found.", "Not Found")
            for sid, cents in bulk["rows"]:  # not idempotent, like Prolific's: paying twice pays twice
                self.submissions[sid]["bonus_payments"].append(float(cents))
            self.paid.append(m.group(1))
            return _json({}, 202)
        if path == "hooks/secrets/" and method == "POST":
            secret = {"id": next(self.ids), "value": "prolific-made-secret-value", "workspace_id": body["workspace_id"]}
            self.secrets.append(secret)
            return _json(secret, 201)
        if path == "hooks/subscriptions/" and method == "POST":
            sub = {
                "id": next(self.ids),
                "event_type": body["event_type"],
                "target_url": body["target_url"],
                "workspace_id": body["workspace_id"],
                "is_enabled": False,
                "_hook_secret": next(self.ids),
            }
            self.subscriptions[sub["id"]] = sub
            return _json(
                {k: v for k, v in sub.items() if not k.startswith("_")}, 201, {"X-Hook-Secret": sub["_hook_secret"]}
            )
        m = re.fullmatch(r"hooks/subscriptions/(\w+)/", path)
        if m and method == "POST":
            sub = self.subscriptions.get(m.group(1))
            if sub is None or body.get("secret") != sub["_hook_secret"]:
                return _error(400, "The secret does not match.")
            sub["is_enabled"] = True
            return _json({k: v for k, v in sub.items() if not k.startswith("_")})
        return _error(404, f"no route {method} {path}", "Not Found")

    def create_study(self, body):
        missing = [
            f
            for f in (
                "name",
                "description",
                "external_study_url",
                "completion_codes",
                "total_available_places",
                "estimated_completion_time",
                "reward",
            )
            if f not in body
        ]
        if missing:
            return _error(400, {f: ["This field is required."] for f in missing})
        for code in body["completion_codes"]:
            if not code.get("actions"):
                return _error(400, {"completion_codes": ["actions: This field is required."]})
        sid, self.next_study_id = self.next_study_id, next(self.ids)
        study = dict(body, id=sid, status="UNPUBLISHED", places_taken=0, currency_code="GBP")
        self.studies[sid] = study
        return _json(study, 201)

    def transition_study(self, study, action):
        moves = {
            ("PUBLISH", "UNPUBLISHED"): "ACTIVE",
            ("PAUSE", "ACTIVE"): "PAUSED",
            ("START", "PAUSED"): "ACTIVE",
            ("STOP", "ACTIVE"): "COMPLETED",
            ("STOP", "PAUSED"): "COMPLETED",
        }
        new = moves.get((action, study["status"]))
        if new is None:
            return _error(400, f"Cannot {action} a study that is {study['status']}.")
        study["status"] = new
        return _json(study)

    def list_submissions(self, request):
        study = request.args.get("study")
        page, size = int(request.args.get("page", 1)), int(request.args.get("page_size", 20))
        rows = [s for s in self.submissions.values() if s["study_id"] == study]
        chunk = rows[(page - 1) * size : page * size]
        nxt = (
            self.server.url_for("/api/v1/submissions/") + f"?study={study}&page={page + 1}&page_size={size}"
            if page * size < len(rows)
            else None
        )
        fields = ("id", "participant_id", "study_id", "status", "started_at", "completed_at", "entered_code")
        return _json(
            {
                "results": [{k: s[k] for k in fields} for s in chunk],
                "_links": {"next": {"href": nxt, "title": "Next"}},
                "meta": {"count": len(rows)},
            }
        )

    def transition_submission(self, sub, body):
        action = body.get("action")
        if action != "REJECT":
            return _error(400, f"unsupported action {action!r} in the fake")
        if len(body.get("message") or "") < 100:
            return _error(400, {"message": ["Ensure this field has at least 100 characters."]})
        if body.get("rejection_category") not in REJECT_CATEGORIES:
            return _error(400, {"rejection_category": ["Not a valid choice."]})
        if sub["status"] not in ("AWAITING REVIEW", "REJECTED"):
            return _error(400, f"Cannot reject a submission that is {sub['status']}.")
        sub["status"] = "REJECTED"
        return _json(sub)

    def set_up_bonuses(self, body):
        rows = []
        for line in (body.get("csv_bonuses") or "").splitlines():
            sid, amount = line.split(",")
            if self.submissions.get(sid, {}).get("study_id") != body.get("study_id"):
                return _error(400, f"{sid} did not take part in this study")
            rows.append((sid, round(float(amount) * 100)))
        bulk = {
            "id": next(self.ids),
            "study": body["study_id"],
            "amount": sum(c for _s, c in rows),
            "fees": round(sum(c for _s, c in rows) * 0.333, 2),
            "vat": 0,
            "rows": rows,
        }
        bulk["total_amount"] = bulk["amount"] + bulk["fees"]
        self.bulk_bonuses[bulk["id"]] = bulk
        return _json({k: v for k, v in bulk.items() if k != "rows"}, 201)


@pytest.fixture
def fake(httpserver, settings):
    """The fake Prolific API, with Argora pointed at it (token, API URL, public https URL, webhook secret); the
    client's waits are recorded in ``fake.sleeps`` instead of slept."""
    server = FakeProlific(httpserver)
    httpserver.expect_request(re.compile(r"^/api/v1/.*")).respond_with_handler(server)
    settings.ARGORA_PROLIFIC_API_URL = httpserver.url_for("/api/v1/")
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.ARGORA_PUBLIC_URL = "https://argora.example.org"
    settings.ARGORA_PROLIFIC_WEBHOOK_SECRET = SECRET
    settings.ARGORA_PROLIFIC_CURRENCY = "GBP"
    settings.ARGORA_PROLIFIC_MIN_HOURLY_CENTS = 900
    server.sleeps = []
    prolific_client.set_sleep(server.sleeps.append)
    try:
        yield server
    finally:
        prolific_client.set_sleep(None)


def make_project(
    *, hits: int = 2, r: int = 2, items_per_hit: int = 2, slug: str = "nuclear-prolific", **study
) -> Project:
    project = ProjectFactory(
        name="Nuclear energy: stance",
        slug=slug,
        config={"labels": ["pro", "con", "none"]},
        assignments_per_item=r,
        items_per_hit=items_per_hit,
        time_estimate_seconds=120,
        items=[
            {"text": TEXTS[i % len(TEXTS)] + f" ({i})", "topic": "nuclear energy"} for i in range(hits * items_per_hit)
        ],
    )
    values = {
        "name": "Label the stance of sentences on nuclear energy",
        "description": "Read short sentences and say whether each is for or against nuclear energy.",
        "places": 10,
        "estimated_minutes": 10,
        "completed_code": "DONE2026",
        "screened_out_code": "SCREEN26",
    }
    values.update(study)
    ProlificStudy.objects.create(project=project, **values)
    return project


def signed(body: bytes, *, secret: str = SECRET, stamp: float | None = None) -> dict:
    """The headers Prolific sends with a webhook delivery."""
    ts = str(int(time.time() if stamp is None else stamp))
    sig = base64.b64encode(hmac.new(secret.encode(), ts.encode() + body, hashlib.sha256).digest()).decode()
    return {"HTTP_X_PROLIFIC_REQUEST_SIGNATURE": sig, "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": ts}
