"""The one project-of-a-task-type lookup (annotation.selectors.project_of_type / wrong_task_type)."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.selectors import project_of_type, wrong_task_type
from annotation.task_types.bws_similarity.project import BWSProjectError, _check
from annotation.task_types.ratings import RatingsError
from annotation.task_types.ratings.items import get_project as ratings_project
from annotation.task_types.validity_novelty.results import ValNovError
from annotation.task_types.validity_novelty.results import get_project as valnov_project
from argora.errors import FieldError

pytestmark = pytest.mark.django_db


class Oops(Exception):
    pass


def test_wrong_task_type_names_the_project_and_the_types():
    project = services.create_project(name="S", slug="s", task_type="sentence_label")
    assert wrong_task_type(project, "sentence_label") is None
    assert wrong_task_type(project, ("aspect", "sentence_label")) is None
    assert wrong_task_type(project, "aspect") == "'s' is a 'sentence_label' project, not 'aspect'"
    assert (
        wrong_task_type(project, ("pairwise_preference", "likert_debate"))
        == "'s' is a 'sentence_label' project, not 'pairwise_preference' or 'likert_debate'"
    )


def test_project_of_type_finds_refuses_and_creates():
    project = services.create_project(name="S", slug="s", task_type="sentence_label")
    assert project_of_type("s", "sentence_label") == project
    with pytest.raises(Oops) as exc:
        project_of_type("s", "aspect", error=Oops)
    assert str(exc.value) == "project 's' is a 'sentence_label' project, not 'aspect'"
    with pytest.raises(ValueError) as exc:
        project_of_type("nope", "aspect")
    assert str(exc.value) == "no project with slug 'nope'"
    with pytest.raises(Oops) as exc:
        project_of_type("nope", "aspect", error=Oops, hint=" (use --create)")
    assert str(exc.value) == "no project with slug 'nope' (use --create)"
    made = project_of_type(
        "new", "aspect", create=lambda: services.create_project(name="N", slug="new", task_type="aspect")
    )
    assert made.slug == "new" and made.task_type == "aspect"
    assert project_of_type("new", "aspect", create=lambda: pytest.fail("not called for an existing project")) == made


def test_the_task_types_lookups_keep_their_error_classes_and_defaults():
    services.create_project(name="S", slug="s", task_type="sentence_label")
    with pytest.raises(RatingsError, match=r"^project 's' is a 'sentence_label' project, not 'likert_debate'$"):
        ratings_project("s", "likert_debate")
    with pytest.raises(RatingsError, match=r"^no project with slug 'x'$"):
        ratings_project("x", "likert_debate")
    ld = ratings_project("ld", "likert_debate", create=True, items_per_hit=None)
    assert (ld.task_type, ld.assignments_per_item, ld.items_per_hit) == ("likert_debate", 5, 1)
    with pytest.raises(ValNovError, match=r"^project 's' is a 'sentence_label' project, not 'validity_novelty'$"):
        valnov_project("s")
    assert valnov_project("vn", create=True).assignments_per_item == 3
    with pytest.raises(BWSProjectError) as exc:
        _check(ld)
    assert isinstance(exc.value, FieldError) and exc.value.as_dict() == {
        "project": "'ld' is a 'likert_debate' project, not 'bws_similarity'"
    }
