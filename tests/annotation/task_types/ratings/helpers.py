"""Shared set-up for the ratings tests: small pair / debate files and projects built through the services."""

from __future__ import annotations

import json

from annotation import services
from annotation.task_types.ratings import LIKERT, PAIRWISE, items

PAIRS = [
    {
        "topic": "Nuclear energy",
        "stance": "pro",
        "a": {"system": "arg-ctrl", "text": "Nuclear power plants emit almost no CO2 while running."},
        "b": {
            "system": "reference",
            "text": "Nuclear energy provides reliable base-load power without greenhouse gases.",
        },
    },
    {
        "topic": "Nuclear energy",
        "stance": "con",
        "a": {"system": "arg-ctrl", "text": "Nuclear waste stays dangerous for thousands of years."},
        "b": {"system": "reference", "text": "There is still no permanent storage site for spent fuel."},
    },
    {
        "topic": "School uniforms",
        "stance": "pro",
        "a": {"system": "reference", "text": "Uniforms reduce bullying about clothes."},
        "b": {"system": "arg-ctrl", "text": "School uniforms make students feel equal and part of a community."},
    },
    {
        "topic": "School uniforms",
        "stance": "con",
        "a": {"system": "arg-ctrl", "text": "Uniforms is cost much money for families and they are ugly."},
        "b": {"system": "reference", "text": "Uniforms take away a way for teenagers to express themselves."},
    },
]


def debate(i, system, n=4, topic="All religions should be banned"):
    return {
        "id": f"d{i}",
        "system": system,
        "topic": topic,
        "turns": [
            {"speaker": "Alice" if k % 2 == 0 else "Bob", "text": f"Turn {k + 1} of debate {i}: point number {k + 1}."}
            for k in range(n)
        ],
    }


DEBATES = [debate(1, "human"), debate(2, "human"), debate(3, "bart"), debate(4, "bart")]


def write_jsonl(tmp_path, rows, name="rows.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def pairwise_project(tmp_path, slug="pp", rows=PAIRS, **settings):
    settings.setdefault("status", "active")
    project = items.get_project(slug, PAIRWISE, create=True, **settings)
    items.import_pairs(project, write_jsonl(tmp_path, rows, "pairs.jsonl"))
    return project


def likert_project(tmp_path, slug="ld", rows=DEBATES, **settings):
    settings.setdefault("status", "active")
    project = items.get_project(slug, LIKERT, create=True, **settings)
    items.import_debates(project, write_jsonl(tmp_path, rows, "debates.jsonl"))
    return project


def run_worker(project, worker, answer):
    """Reserve and submit every HIT left for ``worker``; ``answer(item, assignment) -> response``."""
    done = []
    while True:
        a = services.reserve_next_assignment(project, worker)
        if a is None:
            return done
        its = services.assignment_items(a)
        services.submit_assignment(a, worker, {str(i.pk): answer(i, a) for i in its})
        done.append(a)
