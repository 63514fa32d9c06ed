"""The crowd platforms' move onto the shared call log and bonus (``annotation.crowd``) keeps every stored row: a
database at the previous migrations (``mturk`` 0002, ``prolific`` 0002) with calls and bonuses migrates forward with
each row intact -- MTurk's ``paid`` flag read as the shared status -- and back again."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation import services

BEFORE = [("mturk", "0002_unconfirmed_assignments_to_provisional_workers"), ("prolific", "0002_webhook_delivery")]
AFTER = [("mturk", "0003_crowd_call_log_and_bonus_status"), ("prolific", "0003_crowd_call_log")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _rows(apps, app: str, model: str, *fields: str) -> list[tuple]:
    return list(apps.get_model(app, model).objects.order_by("pk").values_list(*fields))


@pytest.mark.django_db(transaction=True)
def test_call_logs_and_bonuses_survive_the_move_to_the_shared_models():
    project = services.create_project(
        name="Migrated", slug="migrated", task_type="sentence_label", config={"labels": ["a", "b"]}
    )
    old = _migrate(BEFORE)
    try:
        m_op, m_bonus = old.get_model("mturk", "MTurkOperation"), old.get_model("mturk", "MTurkBonus")
        for i, status in enumerate(("pending", "done", "failed")):
            m_op.objects.create(
                key=f"approve:{i}",
                operation="approve_assignment",
                project_id=project.pk,
                request={"AssignmentId": f"A{i}"},
                response={"ok": i},
                status=status,
                attempts=i,
                error="e" * i,
                sandbox=bool(i % 2),
            )
        m_bonus.objects.create(
            project_id=project.pk,
            assignment_id="A1",
            worker_id="W1",
            amount_cents=25,
            reason="thanks",
            kind="manual",
            paid=True,
        )
        m_bonus.objects.create(
            project_id=project.pk,
            assignment_id="A2",
            worker_id="W2",
            amount_cents=7,
            reason="top-up",
            kind="wage-topup",
            paid=False,
        )
        p_sub = old.get_model("prolific", "ProlificSubmission").objects.create(
            project_id=project.pk, submission_id="S1", participant_id="P1", status="APPROVED"
        )
        p_bonus = old.get_model("prolific", "ProlificBonus")
        for status in ("planned", "set-up", "paid"):
            p_bonus.objects.create(
                project_id=project.pk,
                submission_id=p_sub.pk,
                amount_cents=10,
                reason=status,
                status=status,
                bulk_id="b1" if status != "planned" else "",
            )
        old.get_model("prolific", "ProlificOperation").objects.create(
            key="bonus-pay:b1",
            operation="bonus_pay",
            method="POST",
            path="bulk-bonus-payments/b1/pay/",
            project_id=project.pk,
            status="uncertain",
            http_status=502,
            repeatable=False,
            context={"bonuses": [1]},
            attempts=1,
        )
        op_fields = ("key", "operation", "project_id", "request", "response", "status", "attempts", "error", "sandbox")
        before_ops = _rows(old, "mturk", "MTurkOperation", *op_fields)
        p_fields = ("key", "status", "http_status", "repeatable", "context", "attempts")
        before_p_ops = _rows(old, "prolific", "ProlificOperation", *p_fields)
        before_p_bonuses = _rows(old, "prolific", "ProlificBonus", "amount_cents", "reason", "status", "bulk_id")

        new = _migrate(AFTER)
        assert _rows(new, "mturk", "MTurkOperation", *op_fields) == before_ops
        assert _rows(new, "mturk", "MTurkOperation", "repeatable") == [(True,)] * 3  # every MTurk call so far
        assert _rows(new, "mturk", "MTurkBonus", "assignment_id", "amount_cents", "kind", "status") == [
            ("A1", 25, "manual", "paid"),
            ("A2", 7, "wage-topup", "planned"),
        ]
        assert _rows(new, "prolific", "ProlificOperation", *p_fields) == before_p_ops
        assert (
            _rows(new, "prolific", "ProlificBonus", "amount_cents", "reason", "status", "bulk_id") == before_p_bonuses
        )

        back = _migrate(BEFORE)  # and back: the flag comes from the status
        assert _rows(back, "mturk", "MTurkBonus", "assignment_id", "paid") == [("A1", True), ("A2", False)]
        assert _rows(back, "mturk", "MTurkOperation", *op_fields) == before_ops
    finally:
        _migrate([n for n in MigrationExecutor(connection).loader.graph.leaf_nodes() if n[0] in ("mturk", "prolific")])
