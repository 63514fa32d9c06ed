"""The dataset card's own fields (licence, citation, description): checked before anything is written, stored on the
release (immutable with it), written near the top of README.md; the CLI passes them as --license / --citation /
--description and the Celery task as ``card``."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Release, Sentence, Topic
from corpus.releases import CARD_LIMITS, build_release, clean_card, release_path
from corpus.tasks.releases import build_release_task
from tests.worker_utils import eager_celery

pytestmark = pytest.mark.django_db
BIB = "@article{x,\n  title = {```odd```}\n}"


@pytest.fixture
def sentences(db):
    topic = Topic.objects.create(name="nuclear energy")
    for i, stance in enumerate(["pro", "con"]):
        Sentence.objects.create(topic=topic, text=f"sentence {i}", stance=stance, content_hash=f"h{i}")


def test_the_card_is_stored_and_written_near_the_top(tmp_artifacts, sentences):
    release = build_release(
        "nuc",
        "1.0",
        card={"license": " CC-BY-4.0 ", "citation": BIB, "description": "Stance of nuclear sentences.\r\nTwo rows."},
    )
    assert release.card == {
        "license": "CC-BY-4.0",
        "citation": BIB,
        "description": "Stance of nuclear sentences.\nTwo rows.",
    }
    card = (release_path(release) / "README.md").read_text()
    top = card.index("## Configuration")
    assert card.index("Stance of nuclear sentences.\nTwo rows.") < top
    assert card.index("## License\n\nCC-BY-4.0\n") < top
    # a citation that contains ``` is fenced by a longer fence, so it cannot end the block
    assert f"## Citation\n\n````\n{BIB}\n````\n" in card and card.index("## Citation") < top
    release.card = {"license": "MIT"}
    with pytest.raises(Release.Immutable, match="card"):
        release.save()
    # no card: no such sections
    plain = build_release("nuc", "1.1")
    assert plain.card == {} and "## License" not in (release_path(plain) / "README.md").read_text()


@pytest.mark.parametrize(
    ("card", "message"),
    [
        ({"license": "a\nb"}, "card.license: one line"),
        ({"license": "x" * (CARD_LIMITS["license"] + 1)}, "card.license: at most 200 characters"),
        ({"citation": 12}, "card.citation: expected text"),
        ({"description": "x" * (CARD_LIMITS["description"] + 1)}, "card.description: at most"),
        ({"doi": "10.1/x"}, "card: unknown field(s) doi"),
        ("MIT", "card: expected an object"),
    ],
)
def test_a_bad_card_names_its_field_and_writes_nothing(tmp_artifacts, sentences, card, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_release("nuc", "1.0", card=card)
    assert not Release.objects.exists() and not (tmp_artifacts / "releases").exists()
    with pytest.raises(ValueError):
        clean_card(card)


def test_the_command_and_the_task_take_the_card(tmp_artifacts, sentences, settings):
    out = io.StringIO()
    call_command(
        "export_release",
        "--name",
        "nuc",
        "--version",
        "1.0",
        "--license",
        "CC0-1.0",
        "--citation",
        BIB,
        "--description",
        "From the CLI.",
        stdout=out,
    )
    release = Release.objects.get(version="1.0")
    assert release.card == {"license": "CC0-1.0", "citation": BIB, "description": "From the CLI."}
    assert "From the CLI." in (release_path(release) / "README.md").read_text()
    with pytest.raises(CommandError, match="card.license: one line") as exc:
        call_command("export_release", "--name", "nuc", "--version", "2.0", "--license", "a\nb", stdout=out)
    assert exc.value.returncode == 2 and not Release.objects.filter(version="2.0").exists()
    with eager_celery(settings):
        result = build_release_task.apply(
            kwargs={
                "name": "nuc",
                "version": "3.0",
                "card": {"license": "MIT"},
                "result_url": "/studio/projects/p/release/",
            }
        ).get()
    assert Release.objects.get(version="3.0").card == {"license": "MIT"}
    assert result["url"] == f"/studio/projects/p/release/#release-{result['release_id']}"
    result = build_release_task.apply(kwargs={"name": "nuc", "version": "4.0"}).get()
    assert result["url"] == f"/admin/corpus/release/{result['release_id']}/change/"
