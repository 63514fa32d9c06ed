"""The layout rules hold (scripts/check_layout.py; see README "Layout"), and every module compiles."""
from __future__ import annotations

import compileall
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_layout_rules_hold():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_layout.py")], capture_output=True,
                            text=True, timeout=120)
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
    (tmp_path / "ml" / "loop.py").write_text("from annotation.services import _gold_count\n"
                                             "def f():\n    from corpus import models\n")
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
