"""Every task type declares the ``Project.config`` keys it reads (``TaskType.config_keys``), and ``checked_config``
refuses an engine key (``Project.engine``) or an undeclared key naming it, then hands the rest to ``clean_config``.

What protects existing studies: every config the tests, the demo and the task types' own writers (sampled BWS pairs,
the ValNov import's columns) give a project passes ``checked_config``; the tests' configs are found by reading the
test sources (a call with a literal ``config={...}`` and a known task type), so a new test config is checked too.
"""

from __future__ import annotations

import ast
import importlib
import io
from collections.abc import Mapping
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation import models, services
from annotation.task_types import all_task_types, get_task_type, unregister
from annotation.task_types.base import ENGINE_KEY_HOMES, ENGINE_KEYS, ResponseInvalid, TaskType
from annotation.task_types.validity_novelty import results as valnov
from tests.annotation.task_types.bws_similarity.helpers import make_project as make_bws_project
from tests.annotation.task_types.validity_novelty.helpers import csv_text, write

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SCANNED = (TESTS, ROOT / "bench")  # the tests' projects and the benchmarks' ones
# the fixture task types (tests/fixtures/<name>/task_type.py): found on disk, not named (tests/annotation/test_new_task_type.py)
FIXTURES = sorted(p.parent.name for p in (TESTS / "fixtures").glob("*/task_type.py"))

# Values that clean_config accepts for the keys that neither a task type's defaults nor a test config give.
EXAMPLES = {
    "aspect": {"threshold": 2, "study": "in-topic", "ranker": "baseline", "free_spans": False},
    "bws_similarity": {
        "n_splits": 5,
        "splits": {"train": ["a", "b"], "dev": ["c"], "test": ["d"]},
        "sampling": {"cloning": {"pairs": 4}},
    },
    "span_grounding": {"threshold": 2, "seed": 3, "show_scheme": True},
    "validity_novelty": {"columns": ["topic", "Premise", "Conclusion"]},
}

# Helpers of the tests that make a project of one task type from a ``config=`` argument.
HELPERS = {
    "aspect_project": "aspect",
    "make_aspect_project": "aspect",
    "gold_project": "aspect",
    "make_span_project": "span_grounding",
}
HELPERS_IN = {  # helpers whose name other test folders use for other things: (folder, name) -> task type
    ("span_grounding", "make_project"): "span_grounding",
}
MODULES = {"bws": "bws_similarity"}  # bws.create_project (annotation.task_types.bws_similarity.project)


def _fixture(name: str) -> TaskType:
    """The fixture task type of tests/fixtures/<name>, without leaving it registered."""
    registered = {t.name for t in all_task_types()}
    module = importlib.import_module(f"tests.fixtures.{name}.task_type")
    if name not in registered:
        unregister(name)
    (cls,) = [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, TaskType) and v.__module__ == module.__name__
    ]
    return cls()


def every_task_type() -> list[TaskType]:
    return [*all_task_types(), *(_fixture(name) for name in FIXTURES)]


def _ids(task_types: list[TaskType]) -> list[str]:
    return [t.name for t in task_types]


TASK_TYPES = every_task_type()


def _defaults(tt: TaskType) -> dict:
    return tt.clean_config({})


# --- the declarations ------------------------------------------------------------------------------------------
def test_the_registry_has_every_task_type_package():
    packages = {p.parent.name for p in (ROOT / "annotation" / "task_types").glob("*/task_type.py")}
    assert len(packages) >= 7 and FIXTURES
    assert {t.name for t in TASK_TYPES} == packages | set(FIXTURES)


@pytest.mark.parametrize("tt", TASK_TYPES, ids=_ids(TASK_TYPES))
def test_every_task_type_declares_its_config_keys_with_a_one_line_description(tt):
    assert isinstance(tt.config_keys, Mapping)
    assert "config_keys" in type(tt).__dict__, f"{tt.name} does not declare config_keys itself"
    for key, description in tt.config_keys.items():
        assert isinstance(key, str) and key.strip() == key and key, key
        assert isinstance(description, str) and description.strip(), f"{tt.name}.{key}: no description"
        assert "\n" not in description, f"{tt.name}.{key}: more than one line"
    assert not set(tt.config_keys) & ENGINE_KEYS, f"{tt.name} declares an engine key"


@pytest.mark.parametrize("tt", TASK_TYPES, ids=_ids(TASK_TYPES))
def test_what_clean_config_fills_in_is_declared(tt):
    """The defaults of a new project (what the studio's config box shows) pass as they are."""
    defaults = _defaults(tt)
    assert set(defaults) <= set(tt.config_keys)
    assert tt.checked_config(defaults) == defaults


def test_the_rating_task_types_and_the_fixture_take_no_config():
    for name in ("likert_debate", "pairwise_preference", *FIXTURES):
        (tt,) = [t for t in TASK_TYPES if t.name == name]
        assert dict(tt.config_keys) == {}
        assert tt.checked_config({}) == {} and tt.checked_config(None) == {}


def test_the_contract_names_the_same_engine_keys_as_the_models():
    assert models.ENGINE_KEYS == ENGINE_KEYS
    assert set(ENGINE_KEY_HOMES) == ENGINE_KEYS
    assert dict(TaskType.config_keys) == {}


# --- checked_config ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tt", TASK_TYPES, ids=_ids(TASK_TYPES))
@pytest.mark.parametrize("key", sorted(ENGINE_KEYS))
def test_an_engine_key_is_refused_naming_it_and_where_it_is_set(tt, key):
    with pytest.raises(ResponseInvalid) as exc:
        tt.checked_config({key: 1})
    assert exc.value.field == key
    assert exc.value.reason == (
        f"{key} is an engine setting (Project.engine), not an option of the {tt.label} task type: "
        f"{ENGINE_KEY_HOMES[key]}"
    )


def test_the_refusal_of_an_engine_key_says_where_the_researcher_sets_it():
    tt = get_task_type("sentence_label")
    with pytest.raises(ResponseInvalid) as exc:
        tt.checked_config({"labels": ["a", "b"], "retrain_every": 6})
    assert "Model retraining page" in exc.value.reason
    with pytest.raises(ResponseInvalid) as exc:
        tt.checked_config({"item_order": {"mode": "random"}})
    assert "settings page in the studio, under Item order" in exc.value.reason


@pytest.mark.parametrize("tt", TASK_TYPES, ids=_ids(TASK_TYPES))
def test_an_unknown_key_is_refused_naming_it_and_the_options(tt):
    with pytest.raises(ResponseInvalid) as exc:
        tt.checked_config({**_defaults(tt), "top-k": 3})
    assert exc.value.field == "top-k"
    options = ", ".join(sorted(tt.config_keys)) or "none (it takes no config)"
    assert exc.value.reason == f"not an option of task type {tt.name}; its options: {options}"


def test_an_engine_key_is_named_before_an_unknown_one_and_keys_in_sorted_order():
    tt = get_task_type("aspect")
    with pytest.raises(ResponseInvalid) as exc:
        tt.checked_config({"aaa": 1, "zzz": 2, "retrain_kinds": []})
    assert exc.value.field == "retrain_kinds"
    with pytest.raises(ResponseInvalid) as exc:
        tt.checked_config({"zzz": 2, "aaa": 1})
    assert exc.value.field == "aaa"


def test_checked_config_then_checks_the_values_as_clean_config_does():
    aspect = get_task_type("aspect")
    with pytest.raises(ResponseInvalid) as exc:
        aspect.checked_config({"top_k": 0})
    assert exc.value.field == "top_k"
    assert aspect.checked_config({"top_k": 3}) == aspect.clean_config({"top_k": 3})
    labels = get_task_type("sentence_label")
    assert labels.checked_config({"labels": [" a", "b "]}) == {"labels": ["a", "b"]}


def test_a_config_that_is_not_an_object_goes_to_clean_config_unchanged():
    """No new refusal for a non-object: callers check the type themselves (the studio, the API)."""
    tt = get_task_type("likert_debate")
    assert tt.checked_config(None) == tt.clean_config(None) == {}


# --- configs that exist: the tests', the demo's, the task types' own writers' -----------------------------------
def _task_type_of(call: ast.Call, path: Path) -> str | None:
    """The task type a call in the tests makes a project of, where the call says it; else ``None``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    for kw in call.keywords:
        if kw.arg == "task_type" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value
    names = {t.name for t in TASK_TYPES}
    for arg in call.args:  # a helper that takes the task type first: setup("bws_similarity", config=...)
        if isinstance(arg, ast.Constant) and arg.value in names:
            return arg.value
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in MODULES:
        return MODULES[func.value.id]
    if name in HELPERS:
        return HELPERS[name]
    for (folder, helper), task_type in HELPERS_IN.items():
        if name == helper and folder in path.parts:
            return task_type
    if name in ("create_project", "check_setup", "ProjectFactory") and not any(
        kw.arg == "task_type" for kw in call.keywords
    ):
        return "sentence_label"  # the default task type of services.create_project and of ProjectFactory
    return None


def literal_test_configs() -> list[tuple[str, str, dict]]:
    """``(where, task type, config)`` of every call in the tests (and the benchmarks) that makes a project from a
    literal config."""
    found = []
    for path in sorted(p for folder in SCANNED for p in folder.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            config = next((kw.value for kw in node.keywords if kw.arg == "config"), None)
            if not isinstance(config, ast.Dict):
                continue
            task_type = _task_type_of(node, path)
            if task_type is None:
                continue
            try:
                value = ast.literal_eval(config)
            except ValueError:  # a config built from names ({**CONFIG, ...}, {"top_k": top_k}): not literal
                continue
            found.append((f"{path.relative_to(ROOT)}:{node.lineno}", task_type, value))
    return found


# Configs of the tests that checked_config refuses: each needs a change in its test file (reported to the lead);
# listed so that this check passes until then, fails on any new one, and fails when an entry is no longer needed.
KNOWN_REFUSED: set[tuple[str, str]] = set()


def test_the_scan_finds_the_configs_of_every_task_type_with_options():
    found = literal_test_configs()
    assert len(found) > 50
    with_options = {t.name for t in TASK_TYPES if t.config_keys}
    assert with_options <= {task_type for _, task_type, _ in found}


def _cleaned(tt: TaskType, config: dict) -> dict | None:
    """What clean_config makes of ``config``; ``None`` when it refuses it (a test of a bad value)."""
    try:
        return tt.clean_config(config)
    except ResponseInvalid:
        return None


def test_every_config_the_tests_give_a_project_passes_checked_config():
    """checked_config adds no refusal to a config of the tests that clean_config takes (the tests of a bad value,
    e.g. ``{"labels": []}``, stay refused by clean_config, as before)."""
    refused, known = [], set()
    for where, task_type, config in literal_test_configs():
        tt = get_task_type(task_type)
        cleaned = _cleaned(tt, config)
        if cleaned is None:
            continue
        try:
            assert tt.checked_config(config) == cleaned
        except ResponseInvalid as exc:
            if (where.rpartition(":")[0], exc.field) in KNOWN_REFUSED:
                known.add((where.rpartition(":")[0], exc.field))
            else:
                refused.append(f"{where}: {task_type} config.{exc.field}: {exc.reason}")
    assert refused == []
    assert known == KNOWN_REFUSED, "an entry of KNOWN_REFUSED is no longer refused: remove it"


@pytest.mark.parametrize(
    "tt", [t for t in TASK_TYPES if t.config_keys], ids=_ids([t for t in TASK_TYPES if t.config_keys])
)
def test_every_declared_key_is_accepted_with_a_value_its_code_takes(tt):
    accepted: set[str] = set(_defaults(tt))
    for _, task_type, config in literal_test_configs():
        if task_type == tt.name and set(config) <= set(tt.config_keys) and _cleaned(tt, config) is not None:
            assert tt.checked_config(config) == tt.clean_config(config)
            accepted |= set(config)
    example = EXAMPLES.get(tt.name, {})
    assert tt.checked_config(example) == tt.clean_config(example)
    accepted |= set(example)
    assert accepted == set(tt.config_keys)


@pytest.mark.django_db
def test_every_config_of_the_demo_passes_checked_config(monkeypatch):
    made = []
    create = services.create_project

    def recording(**kwargs):
        made.append((kwargs.get("task_type") or "sentence_label", kwargs.get("config")))
        return create(**kwargs)

    monkeypatch.setattr(services, "create_project", recording)
    call_command("load_demo", stdout=io.StringIO())
    assert made, "the demo made no project"
    for task_type, config in made:
        get_task_type(task_type).checked_config(config)


@pytest.mark.django_db
def test_the_config_a_bws_project_has_after_sampling_passes_checked_config():
    project = make_bws_project(pairs=4, build=False)
    assert {"pairs", "sampling"} <= set(project.config)
    tt = project.get_task_type()
    assert tt.checked_config(project.config) == tt.clean_config(project.config)


@pytest.mark.django_db
def test_the_config_a_valnov_project_has_after_an_import_passes_checked_config(tmp_path):
    project = valnov.get_project("vn", create=True)
    valnov.import_file(project, write(tmp_path, csv_text()))
    project.refresh_from_db()
    assert "columns" in project.config
    project.get_task_type().checked_config(project.config)
