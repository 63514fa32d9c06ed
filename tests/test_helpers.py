"""The shared helpers of argora (one of each): the field error and its API handler, the JSONL reader / atomic
writer, enqueue-once; and annotation's provider slots."""

from __future__ import annotations

import pickle
from unittest import mock

import pytest
from django.core.cache import cache
from rest_framework.test import APIRequestFactory

from annotation import providers
from argora.debounce import enqueue_once
from argora.errors import FieldError, FileLineError, api_exception_handler, command_error
from argora.jsonl import read_jsonl, write_jsonl


def test_field_error_names_the_field_everywhere():
    exc = FieldError("labels", "give a non-empty list")
    assert str(exc) == "labels: give a non-empty list" and isinstance(exc, ValueError)
    assert exc.under("config").as_dict() == {"config.labels": "give a non-empty list"}
    response = api_exception_handler(exc, {"request": APIRequestFactory().get("/")})
    assert response.status_code == 400 and response.data == {"errors": {"labels": "give a non-empty list"}}
    cli = command_error(exc)
    assert cli.returncode == 2 and str(cli) == "labels: give a non-empty list"


def test_file_line_error_survives_pickling():
    exc = pickle.loads(pickle.dumps(FileLineError("a.jsonl", 3, "bad")))
    assert (str(exc), exc.file, exc.line, exc.reason) == ("a.jsonl:3: bad", "a.jsonl", 3, "bad")


def test_jsonl_round_trip_and_errors(tmp_path):
    path = tmp_path / "out" / "rows.jsonl"
    assert write_jsonl([{"b": 1, "a": "é"}, {"a": 2}], path) == 2
    assert path.read_text(encoding="utf-8") == '{"a": "é", "b": 1}\n{"a": 2}\n'
    assert list(read_jsonl(path)) == [(1, {"a": "é", "b": 1}), (2, {"a": 2})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(FileLineError, match=r"bad.jsonl:3: expected a JSON object, got list"):
        list(read_jsonl(bad))
    bad.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(FileLineError, match=r"bad.jsonl:2: invalid JSON: Expecting value \(column 7\)"):
        list(read_jsonl(bad))
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(FileLineError, match=r"empty.jsonl:0: no rows"):
        list(read_jsonl(tmp_path / "empty.jsonl", require_rows=True))
    with pytest.raises(FileLineError, match=r"missing.jsonl:0: cannot read"):
        list(read_jsonl(tmp_path / "missing.jsonl"))


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    write_jsonl([{"a": 1}], path)

    def rows():
        yield {"a": 2}
        raise RuntimeError("the export failed half-way")

    with pytest.raises(RuntimeError):
        write_jsonl(rows(), path)
    assert path.read_text() == '{"a": 1}\n' and [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


@pytest.mark.django_db(transaction=True)
def test_enqueue_once_enqueues_one_task_per_window():
    task = mock.Mock()
    cache.delete("test:once")
    assert enqueue_once("test:once", task, window=60, args=[1], countdown=5) is True
    assert enqueue_once("test:once", task, window=60, args=[1]) is False
    assert task.apply_async.call_args_list == [mock.call(args=[1], kwargs={}, countdown=5)]
    assert enqueue_once("test:once", task, window=60, args=[2], force=True) is True
    cache.delete("test:once")


def test_an_empty_provider_slot_says_what_is_missing():
    slot = providers.Slot("encode", "install the ml app")
    assert not slot.filled and slot.get([]) is None
    with pytest.raises(providers.ProviderMissing, match="no encode provider: install the ml app"):
        slot(["a text"])
    slot.fill("os.path.join")  # a dotted path is imported when called
    assert slot("a", "b") == "a/b"
    slot.fill(lambda texts: len(texts))
    assert slot(["x", "y"]) == 2


def test_ml_fills_the_slots_annotation_declares():
    assert all(
        s.filled
        for s in (
            providers.ranker,
            providers.span_suggester,
            providers.encode,
            providers.default_encoder,
            providers.pair_encoder,
        )
    )


def test_spreadsheet_cells_never_run_as_formulas():
    from argora.spreadsheet import csv_response, safe_cell

    for text in ("=1+1", "+SUM(A1)", "-2+3", "@cmd", "\t=x", "\r=x", '=HYPERLINK("http://x")'):
        assert safe_cell(text) == "'" + text
    for value in ("-0.25", "+3", "1e-3", "plain text", "", -0.25, 3, None):
        assert safe_cell(value) == value
    body = csv_response("x.csv", [["a", "b"], ["=1+1", "-0.5"]]).content.decode()
    assert body == "a,b\r\n'=1+1,-0.5\r\n"
