"""The pages' styles live in static CSS files, none inline: no template has a ``<style>`` block (the engine's pages
link argora.css, hit.css, studio.css, dashboard.css, ml.css...; a task type ships its own through the contract's
``stylesheet`` slot), and every registered task type's stylesheet is a real static file, linked once in the <head> of
each page that shows the task type's template (the HIT page, MTurk's and the training page), after the engine's
hit.css so that the task type's rules win a tie."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.templatetags.static import static

from annotation.hit_page import hit_context
from annotation.models import Project
from annotation.task_types import all_task_types, package_dir

ROOT = Path(__file__).resolve().parents[2]
STYLED = ("aspect", "bws_similarity", "likert_debate", "pairwise_preference", "span_grounding", "validity_novelty")


def template_files() -> list[Path]:
    folders = [
        ROOT / "templates",
        *ROOT.glob("*/templates"),
        *ROOT.glob("annotation/task_types/*/templates"),
        ROOT / "tests" / "fixtures",
    ]
    return sorted(p for folder in folders for p in folder.rglob("*.html"))


def test_no_template_has_a_style_block():
    files = template_files()
    assert len(files) > 50 and ROOT / "templates" / "annotation" / "hit.html" in files
    inline = [str(p.relative_to(ROOT)) for p in files if re.search(r"<style\b", p.read_text(encoding="utf-8"), re.I)]
    assert inline == []


def test_the_task_types_that_had_inline_styles_declare_a_stylesheet():
    declared = {tt.name: tt.stylesheet for tt in all_task_types()}
    assert {name: declared[name] for name in STYLED} == {name: f"task_types/{name}/hit.css" for name in STYLED}


def head_of(html: str) -> str:
    assert html.count("</head>") == 1
    return html.split("</head>")[0]


@pytest.mark.django_db
@pytest.mark.parametrize("task_type", [tt for tt in all_task_types() if tt.stylesheet], ids=lambda tt: tt.name)
def test_a_task_types_stylesheet_is_a_static_file_linked_in_the_head_after_hit_css(task_type):
    prefix, package, file = task_type.stylesheet.split("/", 2)
    assert prefix == "task_types" and package_dir(package) is not None  # a file of a task type package's static/
    found = finders.find(task_type.stylesheet)
    assert found and Path(found) == package_dir(package) / "static" / file and Path(found).stat().st_size > 0
    project = Project(name="Styled", slug="styled", task_type=task_type.name)
    link = f'<link rel="stylesheet" href="{static(task_type.stylesheet)}">'
    for template, extra in (
        ("annotation/hit.html", {}),
        ("mturk/hit.html", {"preview": True, "mturk": True}),
        ("annotation/phases/training.html", {"number": 2, "total": 3}),
    ):
        head = head_of(render_to_string(template, hit_context(project, [], **extra)))
        assert head.count(link) == 1, template
        assert head.index(static("annotation/hit.css")) < head.index(link), template


@pytest.mark.django_db
def test_a_task_type_without_a_stylesheet_links_none():
    (plain,) = [tt for tt in all_task_types() if tt.name == "sentence_label"]
    assert plain.stylesheet is None
    head = head_of(
        render_to_string(
            "annotation/hit.html", hit_context(Project(name="P", slug="p", task_type="sentence_label"), [])
        )
    )
    assert "/static/task_types/" not in head
