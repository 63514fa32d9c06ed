"""The engine's keys of a project live in ``Project.engine``, the task type's options in ``Project.config``: migration
0012 moves every engine key of a populated database out of ``config`` (and back when reversed), and every writer of
an engine key (the item order, the studio's settings, the retrain loop's settings) writes ``engine``, never
``config``."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import services
from annotation.models import ENGINE_KEYS, Project
from annotation.studio import services as studio
from ml import loop
from tests.factories import ProjectFactory

BEFORE = [("annotation", "0011_spannormalisation_moves_to_span_grounding")]
AFTER = [("annotation", "0012_project_engine")]
LABELS = ["pro", "con", "none"]

ENGINE_VALUES = {
    "item_order": {"mode": "disagreement", "r_min": 2, "r_max": 3, "min_agreement": 0.7},
    "retrain_kinds": ["ranker"],
    "retrain_every": 6,
    "retrain_max_rows": 100,
    "retrain_max_steps": 0,
    "retrain_max_seconds": 1800,
    "studio_import": {"job": "j-1", "source": "tsv", "file": "uniforms.tsv", "summary": {"items": 2, "hits": 1}},
    "studio_additions": [{"job": "j-2", "file": "more.tsv", "summary": {"items": 4}}],
    "guidelines_markdown": "# Read this\n\nMark **every** sentence.",
}


def _migrate(targets) -> MigrationExecutor:
    """Migrate to ``targets``; returns an executor whose loader has the state reached (for historical models)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    return executor


def _historical_project(executor, targets):
    return executor.loader.project_state(targets).apps.get_model("annotation", "Project")


def test_the_engine_keys_are_the_nine_the_engine_reads():
    assert ENGINE_KEYS == set(ENGINE_VALUES)


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_every_engine_key_out_of_config_and_back():
    executor = _migrate(BEFORE)
    OldProject = _historical_project(executor, BEFORE)
    assert "engine" not in {f.name for f in OldProject._meta.get_fields()}
    task_options = {"labels": LABELS, "top_k": 10, "note": "ünïcode ✓"}
    configs = {
        "everything": {**task_options, **ENGINE_VALUES},
        "some": {"labels": LABELS, "retrain_every": 0, "guidelines_markdown": ""},
        "options-only": dict(task_options),
        "empty": {},
    }
    configs.update({f"bulk-{n}": {"labels": LABELS, "item_order": "uncertainty", "n": n} for n in range(520)})
    for slug, config in configs.items():
        OldProject.objects.create(name=slug, slug=slug, task_type="sentence_label", config=config, invite_token=slug)

    executor = _migrate(AFTER)
    NewProject = _historical_project(executor, AFTER)
    rows = {p.slug: p for p in NewProject.objects.all()}
    assert set(rows) == set(configs)
    for slug, before in configs.items():
        p = rows[slug]
        assert p.config == {k: v for k, v in before.items() if k not in ENGINE_VALUES}, slug  # options untouched
        assert p.engine == {k: v for k, v in before.items() if k in ENGINE_VALUES}, slug  # every engine key moved
    assert rows["everything"].engine == ENGINE_VALUES and rows["everything"].config == task_options
    assert rows["some"].engine == {"retrain_every": 0, "guidelines_markdown": ""}  # falsy values move too
    assert rows["bulk-519"].engine == {"item_order": "uncertainty"}  # past the first batch

    executor = _migrate(BEFORE)
    OldProject = _historical_project(executor, BEFORE)
    assert {p.slug: p.config for p in OldProject.objects.all()} == configs

    executor = _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())  # leave the database at the latest
    assert not executor.migration_plan(executor.loader.graph.leaf_nodes())
    assert Project.objects.get(slug="everything").engine == ENGINE_VALUES


def _project_updates(queries) -> list[str]:
    table = connection.ops.quote_name(Project._meta.db_table)
    return [q["sql"] for q in queries if q["sql"].startswith(f"UPDATE {table}")]


def _assert_engine_only(captured, project: Project, config: dict) -> None:
    """Every UPDATE of the project row in ``captured`` left ``config`` out; ``config`` reads back unchanged."""
    updates = _project_updates(captured.captured_queries)
    assert updates, "nothing was written"
    column = connection.ops.quote_name("config")
    assert all(column not in sql for sql in updates), updates
    project.refresh_from_db()
    assert project.config == config


@pytest.mark.django_db
def test_set_item_order_writes_engine_never_config():
    project = ProjectFactory(config={"labels": LABELS}, items=6, assignments_per_item=3, items_per_hit=2)
    with CaptureQueriesContext(connection) as captured:
        services.set_item_order(project, {"mode": "disagreement", "r_min": 2})
    _assert_engine_only(captured, project, {"labels": LABELS})
    assert project.engine == {"item_order": {"mode": "disagreement", "r_min": 2, "r_max": 3, "min_agreement": 0.7}}


@pytest.mark.django_db
def test_the_studio_settings_write_the_guidelines_source_to_engine_never_config():
    project = ProjectFactory(config={"labels": LABELS}, items=2, engine={"retrain_every": 5})
    with CaptureQueriesContext(connection) as captured:
        studio.update_settings(project, {"reward_cents": 30}, guidelines_markdown="# Read\n\nAll of it.")
    _assert_engine_only(captured, project, {"labels": LABELS})
    assert project.engine == {"retrain_every": 5, studio.GUIDELINES_KEY: "# Read\n\nAll of it."}  # the rest kept
    assert project.reward_cents == 30 and project.guidelines.startswith("<h1>Read</h1>")


@pytest.mark.django_db
def test_update_retrain_settings_writes_engine_never_config():
    project = ProjectFactory(config={"labels": LABELS}, items=0, build=False, engine={"item_order": "uncertainty"})
    with CaptureQueriesContext(connection) as captured:
        got = loop.update_retrain_settings(project, {"retrain_every": 8, "retrain_max_rows": 0})
    _assert_engine_only(captured, project, {"labels": LABELS})
    assert project.engine == {"item_order": "uncertainty", "retrain_every": 8, "retrain_max_rows": 0}
    assert got["retrain_every"] == {"value": 8, "default": loop.default_setting("retrain_every"), "own": True}
    loop.update_retrain_settings(project, {"retrain_max_rows": None})  # back to the default: the key goes
    project.refresh_from_db()
    assert project.engine == {"item_order": "uncertainty", "retrain_every": 8}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "engine,field",
    [
        (["item_order"], "engine"),
        ({"labels": LABELS}, "engine.labels"),  # a task-type option is no engine key
        ({"retrain_every": -1}, "engine.retrain_every"),
        ({"retrain_max_rows": "many"}, "engine.retrain_max_rows"),
        ({"retrain_max_steps": True}, "engine.retrain_max_steps"),
        ({"retrain_kinds": "ranker"}, "engine.retrain_kinds"),
        ({"item_order": {"mode": "disagreement", "r_max": 9}}, "engine.item_order.r_max"),  # above R
    ],
)
def test_create_project_refuses_a_bad_engine_naming_the_field(engine, field):
    with pytest.raises(services.ProjectInvalid) as exc:
        services.create_project(name="Bad", task_type="sentence_label", config={"labels": LABELS}, engine=engine)
    assert exc.value.field == field
    assert not Project.objects.filter(name="Bad").exists()


@pytest.mark.django_db
def test_create_project_stores_engine_beside_config():
    project = services.create_project(
        name="Both", task_type="sentence_label", config={"labels": LABELS}, engine={"retrain_every": 3}
    )
    project.refresh_from_db()
    assert project.engine == {"retrain_every": 3} and project.config == {"labels": LABELS}
    assert loop.retrain_every(project) == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    "value,reason",
    [
        (10**9 + 1, "must be between 0 and 1000000000, got 1000000001"),
        (-1, "must be between 0 and 1000000000, got -1"),
        ("2.5", "must be a whole number >= 0, got '2.5'"),
        (False, "must be a whole number >= 0, got False"),
    ],
)
def test_a_retrain_number_is_checked_once_for_a_new_project_and_for_the_retraining_page(value, reason):
    """create_project(engine=) and the retraining page's service refuse the same numbers with the same reason."""
    with pytest.raises(services.ProjectInvalid) as new:
        services.create_project(
            name="Bad", task_type="sentence_label", config={"labels": LABELS}, engine={"retrain_max_rows": value}
        )
    assert (new.value.field, new.value.reason) == ("engine.retrain_max_rows", reason)
    project = ProjectFactory(config={"labels": LABELS}, items=0, build=False, engine={"retrain_max_rows": 7})
    with pytest.raises(services.ProjectInvalid) as page:
        loop.update_retrain_settings(project, {"retrain_max_rows": value})
    assert (page.value.field, page.value.reason) == ("retrain_max_rows", reason)
    project.refresh_from_db()
    assert project.engine == {"retrain_max_rows": 7}
    # the largest number and a form's digits are taken by both
    made = services.create_project(
        name="Big", task_type="sentence_label", config={"labels": LABELS}, engine={"retrain_max_rows": " 12 "}
    )
    assert made.engine == {"retrain_max_rows": 12}
    assert loop.update_retrain_settings(project, {"retrain_max_rows": 10**9})["retrain_max_rows"]["value"] == 10**9


@pytest.mark.django_db
def test_the_admin_shows_the_engine_read_only(admin_client):
    project = ProjectFactory(config={"labels": LABELS}, items=0, build=False, engine={"retrain_every": 4})
    page = admin_client.get(reverse("admin:annotation_project_change", args=[project.pk])).content.decode()
    assert 'name="config"' in page and 'name="engine"' not in page  # config is edited there, engine only shown
    assert "retrain_every" in page
