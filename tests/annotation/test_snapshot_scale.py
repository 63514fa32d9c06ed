"""Agreement snapshots at scale (issue 25): a snapshot is a small summary, figures without items, and per-item rows
(``AgreementItemRow``) read a page at a time. The agreement page of a project with 100,000 responses loads with a
bounded number of queries -- the same number as a project with 12 -- and reads none of the per-item JSON;
``/dashboards/`` costs the same queries for 2 projects as for 6 and reads no snapshot's figures; the data migration
moves old snapshots' items into rows and back."""

from __future__ import annotations

import importlib
import json
import random
import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.agreement import snapshots
from annotation.agreement import table as agreement_table
from annotation.models import (
    HIT,
    AgreementItemRow,
    AgreementSnapshot,
    Assignment,
    HITItem,
    Item,
    Project,
    Response,
    Worker,
)

pytestmark = pytest.mark.django_db

LABELS = ["pro", "con", "none"]
PAGE_QUERIES = 12  # agreement page: session, user, project, snapshot, submitted count, one page of rows, models, ...
ITEM_ROW_TABLE = AgreementItemRow._meta.db_table
SNAPSHOT_TABLE = AgreementSnapshot._meta.db_table


def big_project(
    slug: str, n_items: int, per_item: int, *, n_workers: int = 50, items_per_hit: int = 10, seed: int = 0
) -> Project:
    """A sentence_label project with ``n_items`` x ``per_item`` submitted responses, written with bulk_create
    (100,000 responses in a few seconds on SQLite): HITs of ``items_per_hit`` items, each answered by
    ``per_item`` distinct workers out of ``n_workers``, 70 % of answers the item's true label."""
    rng = random.Random(seed)
    project = Project.objects.create(
        name=slug,
        slug=slug,
        task_type="sentence_label",
        config={"labels": LABELS},
        assignments_per_item=per_item,
        items_per_hit=items_per_hit,
        status=Project.Status.ACTIVE,
    )
    Item.objects.bulk_create(
        [
            Item(project=project, payload={"text": f"Sentence {i}.", "topic": f"t{i % 4}"}, position=i)
            for i in range(n_items)
        ],
        batch_size=5000,
    )
    items = list(Item.objects.filter(project=project).order_by("position").values_list("pk", flat=True))
    n_hits = -(-n_items // items_per_hit)
    HIT.objects.bulk_create([HIT(project=project, position=h, taken=per_item) for h in range(n_hits)], batch_size=5000)
    hits = list(HIT.objects.filter(project=project).order_by("position").values_list("pk", flat=True))
    HITItem.objects.bulk_create(
        [
            HITItem(hit_id=hits[i // items_per_hit], item_id=pk, position=i % items_per_hit)
            for i, pk in enumerate(items)
        ],
        batch_size=5000,
    )
    User = get_user_model()
    User.objects.bulk_create([User(username=f"{slug}-w{k}") for k in range(n_workers)])
    users = list(User.objects.filter(username__startswith=f"{slug}-w").order_by("pk"))
    Worker.objects.bulk_create([Worker(user=u) for u in users])
    workers = list(Worker.objects.filter(user__in=users).order_by("pk").values_list("pk", flat=True))
    now = timezone.now()
    assignments = []
    for h, hit in enumerate(hits):
        for k, w in enumerate(rng.sample(workers, per_item)):
            t = now + timedelta(seconds=h * per_item + k)
            assignments.append(
                Assignment(
                    project=project,
                    hit_id=hit,
                    worker_id=w,
                    status=Assignment.Status.SUBMITTED,
                    reserved_at=t,
                    expires_at=t + timedelta(hours=1),
                    submitted_at=t,
                )
            )
    Assignment.objects.bulk_create(assignments, batch_size=5000)
    by_hit: dict[int, list[int]] = {}
    for pk, hit in Assignment.objects.filter(project=project).order_by("pk").values_list("pk", "hit_id"):
        by_hit.setdefault(hit, []).append(pk)
    batch = []
    for i, pk in enumerate(items):
        truth = LABELS[i % 3]
        for a in by_hit[hits[i // items_per_hit]]:
            batch.append(
                Response(
                    assignment_id=a, item_id=pk, data={"label": truth if rng.random() < 0.7 else rng.choice(LABELS)}
                )
            )
            if len(batch) >= 10000:
                Response.objects.bulk_create(batch)
                batch = []
    Response.objects.bulk_create(batch)
    return project


def _selected_columns(sql: str, table: str) -> str:
    """The SELECT list of a query reading ``table`` ("" when it does not)."""
    m = re.match(r'\s*SELECT (.*?) FROM "?' + table + r'"?\b', sql, re.S | re.I)
    return m.group(1) if m else ""


def _agreement_page(client, project):
    with CaptureQueriesContext(connection) as ctx:
        r = client.get(reverse("annotation:agreement", args=[project.slug]))
    assert r.status_code == 200, r.content[:500]
    return r.content.decode(), [q["sql"] for q in ctx.captured_queries]


def test_a_project_of_100k_responses_loads_its_agreement_page_in_bounded_queries_without_per_item_json(
    client, staff_user, django_assert_max_num_queries
):
    project = big_project("big", 20_000, 5)
    assert Response.objects.filter(assignment__project=project).count() == 100_000
    created = snapshots.store_snapshots(project)
    snap = created[0]
    assert snap.scope == "project" and snap.n_items == 20_000
    # the figures hold no item; the rows do, ranked lowest agreement first without gaps
    assert "items" not in snap.figures and snap.figures["n_items"] == 20_000
    assert len(json.dumps(snap.figures)) < 100_000  # workers (50), topics (4), charts: not items
    assert snap.summary == {k: snap.figures[k] for k in AgreementSnapshot.SUMMARY_KEYS if k in snap.figures}
    rows = list(AgreementItemRow.objects.filter(snapshot=snap).order_by("rank").values_list("rank", "agreement"))
    assert [r for r, _ in rows] == list(range(20_000))
    with_figure = [a for _, a in rows if a is not None]
    assert with_figure == sorted(with_figure) and with_figure[0] < with_figure[-1]

    small = big_project("small", 4, 3, n_workers=5, items_per_hit=2, seed=1)  # 12 responses
    snapshots.store_snapshots(small)
    client.force_login(staff_user)
    _agreement_page(client, small)  # warm the session

    with django_assert_max_num_queries(PAGE_QUERIES):
        html, sql = _agreement_page(client, project)
    _, small_sql = _agreement_page(client, small)
    assert len(sql) == len(small_sql)  # the count does not grow with the responses
    # no per-item JSON: the item rows' responses are never selected, the responses table is never read, and the
    # snapshot read is the one project row (its figures hold no item)
    row_reads = [_selected_columns(q, ITEM_ROW_TABLE) for q in sql if _selected_columns(q, ITEM_ROW_TABLE)]
    assert row_reads and all('"responses"' not in cols and '"adjudication"' not in cols for cols in row_reads)
    assert all("LIMIT" in q for q in sql if _selected_columns(q, ITEM_ROW_TABLE))
    assert not [q for q in sql if 'FROM "annotation_response"' in q]
    assert f"{snap.n_items} item" in html or "20000" in html
    lowest = AgreementItemRow.objects.filter(snapshot=snap, agreement__isnull=False).order_by("rank").first()
    assert f"#item-{lowest.item_id}" in html

    # the items page: page 3 of 50 rows, on the rank index (no OFFSET), the same queries as page 1
    url = reverse("annotation:agreement-items", args=[project.slug])
    with CaptureQueriesContext(connection) as ctx:
        r = client.get(url, {"page": 3, "limit": 50})
    assert r.status_code == 200
    page_sql = [q["sql"] for q in ctx.captured_queries]
    assert not [q for q in page_sql if "OFFSET" in q.upper()]
    ids = [int(m) for m in re.findall(r'id="item-(\d+)"', r.content.decode())]
    assert ids == list(
        AgreementItemRow.objects.filter(snapshot=snap, rank__gte=100, rank__lt=150)
        .order_by("rank")
        .values_list("item_id", flat=True)
    )
    assert "Items 101–150 of 20000" in r.content.decode() and "page 3 of 400" in r.content.decode()
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    assert len(ctx.captured_queries) == len(page_sql)


def test_store_snapshots_matches_the_project_table_and_keeps_rows_of_the_last_two_only():
    project = big_project("mid", 300, 3, n_workers=8, items_per_hit=5)
    live = agreement_table.project_table(project)
    first = snapshots.store_snapshots(project)[0]
    stored = [r.as_dict() for r in snapshots.item_rows(first)]
    key = {it["item_id"]: it for it in live["items"]}
    assert sorted(r["item_id"] for r in stored) == sorted(key)
    for r in stored:
        assert r == key[r["item_id"]]
    assert stored == sorted(stored, key=snapshots.lowest_first_key)
    assert first.figures["alpha"] == pytest.approx(live["alpha"])
    second = snapshots.store_snapshots(project)[0]
    third = snapshots.store_snapshots(project)[0]
    counts = {s: AgreementItemRow.objects.filter(snapshot=s).count() for s in (first, second, third)}
    assert counts == {first: 0, second: len(key), third: len(key)}  # ITEM_ROWS_KEPT = 2
    assert snapshots.latest_snapshot(project).pk == third.pk


def test_dashboards_read_summaries_only_in_queries_that_do_not_grow_with_projects(client, staff_user):
    client.force_login(staff_user)

    def dashboards():
        with CaptureQueriesContext(connection) as ctx:
            r = client.get(reverse("annotation:dashboards"))
        assert r.status_code == 200
        return r.content.decode(), [q["sql"] for q in ctx.captured_queries]

    for k in range(2):
        snapshots.store_snapshots(big_project(f"p{k}", 6, 3, n_workers=4, items_per_hit=3, seed=k))
    dashboards()
    _, two = dashboards()
    for k in range(2, 6):
        snapshots.store_snapshots(big_project(f"p{k}", 6, 3, n_workers=4, items_per_hit=3, seed=k))
    Project.objects.create(name="empty", slug="empty", task_type="sentence_label", config={"labels": LABELS})
    html, six = dashboards()
    assert len(six) == len(two) <= 7  # the session, the user, the team check (annotation.access), the page's
    snapshot_reads = [_selected_columns(q, SNAPSHOT_TABLE) for q in six if _selected_columns(q, SNAPSHOT_TABLE)]
    assert len(snapshot_reads) == 1 and '"figures"' not in snapshot_reads[0] and '"summary"' in snapshot_reads[0]
    assert not [q for q in six if ITEM_ROW_TABLE in q]
    for k in range(6):
        snap = snapshots.latest_snapshot(Project.objects.get(slug=f"p{k}"))
        row = html[html.index(f'data-project="p{k}"') :]
        row = row[: row.index("</tr>")]
        assert f'data-value="{snap.figures["alpha"]!r}"' in row
        assert f'<td class="num">{AgreementSnapshot.objects.get(pk=snap.pk).based_on}</td>' in row
    assert 'data-project="empty"' in html and "not yet" in html


def test_the_migration_moves_old_snapshot_items_into_rows_and_back():
    project = big_project("old", 30, 3, n_workers=5, items_per_hit=5)
    table = agreement_table.project_table(project)
    old = AgreementSnapshot.objects.create(
        project=project,
        scope="project",
        figures=table,
        n_units=table["n_units"],
        n_coders=table["n_coders"],
        based_on=table["based_on"],
    )
    topic = AgreementSnapshot.objects.create(project=project, scope="topic:t0", figures=table["topics"][0])
    migration = importlib.import_module("annotation.migrations.0008_snapshot_items")
    migration.split_snapshots(apps, None)
    old.refresh_from_db()
    topic.refresh_from_db()
    assert "items" not in old.figures and old.n_items == len(table["items"]) == old.figures["n_items"]
    assert (
        old.summary["alpha"] == pytest.approx(table["alpha"])
        and topic.summary["n_units"] == table["topics"][0]["n_units"]
    )
    rows = [r.as_dict() for r in snapshots.item_rows(old)]
    assert rows == sorted(table["items"], key=snapshots.lowest_first_key)
    migration.join_snapshots(apps, None)
    old.refresh_from_db()
    assert old.figures["items"] == sorted(table["items"], key=lambda it: (it["position"], it["item_id"]))
