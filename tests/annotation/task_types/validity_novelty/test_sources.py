"""The studio's ValNov sources with the gold share (none / first N / N% seeded / all) instead of "as gold"."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation.models import HIT, GoldItem, Item, Project
from annotation.task_types.base import GoldShare, SourceInput
from annotation.task_types.validity_novelty import sources
from argora.errors import FieldError
from tests.annotation.studio.helpers import setup, source_input, write

from .helpers import ROWS, csv_text
from .helpers import write as write_file

pytestmark = pytest.mark.django_db

CONCLUSIONS = [
    "Pentagon rebuild sends wrong message of peace",
    "Twin towers are hardly a symbol of peace",
    "Zoos are useful",
    "People like cafés",
    "Zoos are cruel",
]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def gold_of(project):
    return {g.item.payload["conclusion"]: g.expected for g in GoldItem.objects.filter(item__project=project)}


def test_first_n_rows_are_gold_with_their_labels():
    data = source_input("validity_novelty", "valnov-csv", "st.csv", csv_text(), gold={"mode": "first", "n": 2})
    preview = sources.preview(setup("validity_novelty"), data)
    assert (preview.items, preview.gold) == (3, 2)
    assert [row[-1] for row in preview.rows] == ["gold", "gold", "", "", ""]
    assert "expected answer: its validity and novelty labels" in preview.notes[1]
    project, summary = write("validity_novelty", data, items_per_hit=3)
    assert summary == {"items": 3, "gold": 2}
    assert gold_of(project) == {
        CONCLUSIONS[0]: {"validity": "yes", "novelty": "yes"},
        CONCLUSIONS[1]: {"validity": "no", "novelty": "no"},
    }
    assert HIT.objects.filter(project=project).count() == 1
    assert sorted(
        Item.objects.filter(project=project, is_gold=False).values_list("payload__conclusion", flat=True)
    ) == sorted(CONCLUSIONS[2:])


def test_percent_share_is_seeded_the_same_rows_twice():
    rows = [
        json.dumps(
            {
                "topic": "Zoos",
                "Premise": f"Premise {n}.",
                "Conclusion": f"Conclusion {n}",
                "Validity": 1,
                "Validity-Confidence": "majority",
                "Novelty": -1,
                "Novelty-Confidence": "confident",
            }
        )
        for n in range(20)
    ]
    text = "\n".join(rows) + "\n"

    def run(seed):
        data = source_input(
            "validity_novelty", "valnov-jsonl", "st.jsonl", text, gold={"mode": "percent", "n": 25, "seed": seed}
        )
        preview = sources.preview(setup("validity_novelty"), data)
        assert (preview.items, preview.gold) == (15, 5)
        project, summary = write("validity_novelty", data)
        assert summary == {"items": 15, "gold": 5}
        return sorted(gold_of(project))

    first = run(7)
    assert run(7) == first
    assert any(run(seed) != first for seed in (1, 2, 3))


@pytest.mark.parametrize("gold", [GoldShare("first", 5), GoldShare("first", 9), GoldShare("percent", 100)])
def test_a_share_without_worker_rows_is_refused_unless_all(gold):
    data = source_input("validity_novelty", "valnov-csv", "st.csv", csv_text())
    data = SourceInput(source=data.source, path=data.path, file_name=data.file_name, gold=gold)
    with pytest.raises(FieldError) as exc:
        sources.preview(setup("validity_novelty"), data)
    assert exc.value.field == "gold_n" and "leave some rows for the workers" in exc.value.reason
    with pytest.raises(FieldError):
        write("validity_novelty", data)
    everything = SourceInput(source=data.source, path=data.path, file_name=data.file_name, gold=GoldShare("all"))
    preview = sources.preview(setup("validity_novelty"), everything)
    assert (preview.items, preview.gold) == (0, 5)
    assert not Project.objects.filter(items__isnull=False).exists()


def test_all_rows_gold_added_to_a_project_and_the_cli_as_gold(tmp_path):
    project, _ = write("validity_novelty", source_input("validity_novelty", "valnov-csv", "st.csv", csv_text(ROWS[:2])))
    extra = source_input("validity_novelty", "valnov-csv", "gold.csv", csv_text(ROWS[2:]))
    extra = SourceInput(source=extra.source, path=extra.path, file_name=extra.file_name, gold=GoldShare("all"))
    assert sources.write(project, extra, lambda *a: None) == {"items": 0, "gold": 3}
    assert set(gold_of(project)) == set(CONCLUSIONS[2:]) and gold_of(project)["People like cafés"] == {}
    # valnov import --as-gold: every row a gold item, no HITs
    call_command("valnov", "import", str(write_file(tmp_path, csv_text())), "--project", "g", "--as-gold")
    g = Project.objects.get(slug="g")
    assert set(gold_of(g)) == set(CONCLUSIONS) and not HIT.objects.filter(project=g).exists()
