"""The layout rules hold (scripts/check_layout.py; see README "Layout"), and every module compiles."""

from __future__ import annotations

import compileall
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_layout_rules_hold():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_layout.py")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 problem(s)" in result.stdout


def test_the_check_catches_what_it_is_for(tmp_path, monkeypatch):
    """The checker on a copy of the rules' worst cases: an engine file naming a task type, an upward import, a
    private name of another app, and an unexplained function-local import."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_layout
    finally:
        sys.path.pop(0)
    for app in check_layout.APPS:
        (tmp_path / app).mkdir()
    tt = tmp_path / "annotation" / "task_types" / "demo_type"
    tt.mkdir(parents=True)
    (tt / "__init__.py").write_text("")
    (tt / "task_type.py").write_text('class T:\n    name = "demo_type"\n')
    (tmp_path / "annotation" / "views.py").write_text('if project.task_type == "demo_type":\n    pass\n')
    (tmp_path / "corpus" / "api.py").write_text("from annotation.models import Item\n")
    (tmp_path / "ml" / "loop.py").write_text(
        "from annotation.services import _gold_count\ndef f():\n    from corpus import models\n"
    )
    monkeypatch.setattr(check_layout, "ROOT", tmp_path)
    problems, figures = check_layout.check()
    text = "\n".join(problems)
    assert figures["task_types"] == ["demo_type"]
    assert "annotation/views.py:1: the engine names the task type 'demo_type'" in text
    assert "corpus/api.py:1: corpus imports annotation.models (annotation is not below corpus)" in text
    assert "ml/loop.py:1: imports the private name _gold_count of annotation.services" in text
    assert "ml/loop.py:3: a function-local import of a project module without a comment" in text


def test_every_module_compiles():
    for app in ("argora", "corpus", "annotation", "ml", "mturk", "prolific", "scripts"):
        assert compileall.compile_dir(str(ROOT / app), quiet=1, force=False, workers=1), app


def _checker():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_layout
    finally:
        sys.path.pop(0)
    return check_layout


def _tree(tmp_path, files: dict[str, str]) -> Path:
    for app in ("argora", "corpus", "annotation", "ml", "mturk", "prolific"):
        (tmp_path / app).mkdir(exist_ok=True)
        (tmp_path / app / "__init__.py").write_text("")
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


README_BLOCK = (
    "# Layout\n\n<!-- service-modules -->\n- `annotation/services`: the engine's state changes\n"
    "- `annotation/studio/services`: the studio\n<!-- /service-modules -->\n"
)


def test_the_readme_lists_the_service_modules_the_check_reads():
    """The list the write rule reads is README.md's, and names modules that exist, each with its concern."""
    modules = _checker().service_modules()
    assert {
        "annotation/services",
        "annotation/phases",
        "annotation/identity",
        "annotation/model_annotators",
        "annotation/studio/services",
    } <= set(modules)
    for module, concern in modules.items():
        assert (ROOT / f"{module}.py").is_file() or (ROOT / module).is_dir(), module
        assert concern, module


def test_the_write_rule_catches_a_write_outside_the_service_modules(tmp_path, monkeypatch):
    check_layout = _checker()
    root = _tree(
        tmp_path,
        {
            "README.md": README_BLOCK,
            "annotation/services/__init__.py": "def f(p):\n    p.save()\n",  # a listed package: allowed
            "annotation/services/claims.py": "def f():\n    Item.objects.filter(a=1).update(b=2)\n",
            "annotation/studio/services.py": "def f():\n    Item.objects.bulk_create([])\n",
            "annotation/models/projects.py": "class P:\n    def save(self):\n        super().save()\n",  # a model's own
            "annotation/models/work.py": "def helper(w):\n    w.save()\n",  # but no other write in a models module
            "annotation/views.py": (
                "def f(project, d):\n    d.update(a=1)\n    project.save(update_fields=['name'])\n"
                "    Item.objects.filter(pk=1).update(x=1)\n"
            ),
            "annotation/admin.py": "def act(qs):\n    qs.delete()\n    Worker.objects.get_or_create(a=1)\n",
            "annotation/selectors.py": (
                "SQL = 'UPDATE annotation_hit SET taken = 0'\n"
                "def f(cursor):\n    cursor.execute('SELECT 1')\n    cursor.execute(SQL)\n"
            ),
            "annotation/task_types/demo_type/views.py": "def f(item):\n    item.delete()\n",
            "annotation/api.py": (
                "def f(project, hit, item, seen):\n    seen.add(1)\n    project.items.create(text='x')\n"
                "    hit.items.add(item)\n"
            ),
            "corpus/views.py": "def f(t):\n    t.save()\n",  # outside the rule's scope
        },
    )
    monkeypatch.setattr(check_layout, "ROOT", root)
    problems = check_layout.check_writes(check_layout.source_files(), check_layout.service_modules())
    where = sorted(p.split(": ")[0] for p in problems)
    assert where == [
        "annotation/admin.py:2",
        "annotation/admin.py:3",
        "annotation/api.py:3",
        "annotation/api.py:4",
        "annotation/models/work.py:2",
        "annotation/selectors.py:4",
        "annotation/task_types/demo_type/views.py:2",
        "annotation/views.py:3",
        "annotation/views.py:4",
    ], problems
    assert "UPDATE SQL" in "\n".join(problems)
    (root / "README.md").write_text(README_BLOCK.replace("annotation/studio/services", "annotation/gone"))
    problems = check_layout.check_writes(check_layout.source_files(), check_layout.service_modules())
    assert "README.md: the service module annotation/gone does not exist" in problems
    assert any(p.startswith("annotation/studio/services.py:2: ") for p in problems)


def test_the_cycle_rule_catches_a_circle_and_allows_a_task_pair(tmp_path, monkeypatch):
    check_layout = _checker()
    root = _tree(
        tmp_path,
        {
            "annotation/phases.py": "from . import services\n",
            "annotation/services/__init__.py": "from .claims import claim\n",
            "annotation/services/claims.py": "def claim():\n    from annotation.phases import gate  # a cycle\n",
            "annotation/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .views import V\n",
            "annotation/views.py": "from annotation import typed\n",
            "ml/tasks.py": "from ml import silver\n",
            "ml/silver.py": "def f():\n    from . import tasks  # queues it\n",
            "ml/a.py": "from .b import x\n",
            "ml/b.py": "import ml.c\n",
            "ml/c.py": "from ml.a import y\n",
            "corpus/x.py": "from annotation import phases\n",  # another app: not an intra-app circle
        },
    )
    monkeypatch.setattr(check_layout, "ROOT", root)
    problems = check_layout.check_cycles(check_layout.source_files())
    assert len(problems) == 2, problems
    text = "\n".join(problems)
    assert (
        "annotation: import circle annotation.phases -> annotation.services (annotation/phases.py:1) -> "
        "annotation.services.claims (annotation/services/__init__.py:1) -> annotation.phases "
        "(annotation/services/claims.py:2)"
    ) in text
    assert "ml: import circle ml.a -> ml.b (ml/a.py:1) -> ml.c (ml/b.py:1) -> ml.a (ml/c.py:1)" in text
    assert "tasks" not in text and "typed" not in text


def test_the_length_rule_catches_a_long_module(tmp_path, monkeypatch):
    check_layout = _checker()
    root = _tree(
        tmp_path,
        {"annotation/big.py": "x = 1\n" * 601, "annotation/ok.py": "x = 1\n" * 600, "ml/big.py": "x = 1\n" * 700},
    )
    monkeypatch.setattr(check_layout, "ROOT", root)
    assert check_layout.check_lengths(check_layout.source_files()) == [
        "annotation/big.py: 601 lines (a module of annotation/ has at most 600; split it by concern)"
    ]
