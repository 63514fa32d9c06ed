"""ml.inference: word alignment, BIO <-> spans, length-sorted batching, int8 vs fp32."""

import numpy as np
import pytest

from ml.inference import bio_from_spans, length_sorted_batches, pad_batch, spans_from_bio, words_of


def test_bio_from_character_spans_and_back():
    text = "Nuclear energy is clean but radioactive waste remains."
    words = words_of(text)
    b = text.index("radioactive")
    tags = bio_from_spans(words, [(text.index("clean"), text.index("clean") + 5), (b, b + len("radioactive waste"))])
    assert tags == ["O", "O", "O", "B", "O", "B", "I", "O", "O"]
    assert spans_from_bio(tags) == [(3, 4), (5, 7)]
    assert spans_from_bio(["I", "I", "O", "B", "B"]) == [(0, 2), (3, 4), (4, 5)]  # stray I opens a span


def test_length_sorted_batches_and_dynamic_padding():
    batches = length_sorted_batches([3, 9, 1, 7, 5], 2)
    assert batches == [[1, 3], [4, 0], [2]]
    ids, mask = pad_batch([[1, 2, 3], [4]], pad_id=0)
    assert ids.tolist() == [[1, 2, 3], [4, 0, 0]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    assert ids.dtype == np.int64


@pytest.mark.slow
def test_int8_tagger_keeps_f1_and_batching_does_not_change_predictions(tmp_path, monkeypatch):
    monkeypatch.setenv("ARGORA_TAGGER_ENGINE", "torch")  # the ONNX engine has its own test below
    from ml.registry import TrainRequest
    from ml.trainers import tagger
    from tests.ml.test_taggers import TINY, planted_tagger_rows

    tagger.train(
        TrainRequest(
            kind="tagger",
            rows_train=planted_tagger_rows(160, 1),
            rows_dev=planted_tagger_rows(40, 2),
            base_model=None,
            seed=3,
            hyperparameters=dict(TINY, epochs=3),
            output_dir=tmp_path,
        )
    )
    fp32 = tagger.load(tmp_path, quantize=False)
    int8 = tagger.load(tmp_path, quantize=True)
    assert (fp32.precision, int8.precision) == ("fp32", "int8")
    dev = planted_tagger_rows(60, 5)
    f_fp32 = tagger.evaluate(fp32, dev)["f1_macro"]
    f_int8 = tagger.evaluate(int8, dev)["f1_macro"]
    assert abs(f_fp32 - f_int8) <= 0.005
    texts = [r["sentence"] for r in dev]
    one = fp32.predict(texts, batch_size=1)
    many = fp32.predict(texts, batch_size=64)
    assert [p["tags"] for p in one] == [p["tags"] for p in many]
    assert fp32.predict([]) == []
    [empty] = fp32.predict([""])
    assert empty["spans"] == [] and empty["tags"] == []


@pytest.mark.slow
def test_onnx_engine_matches_torch_and_caches_its_export(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from ml.registry import TrainRequest
    from ml.trainers import tagger
    from tests.ml.test_taggers import TINY, planted_tagger_rows

    tagger.train(
        TrainRequest(
            kind="tagger",
            rows_train=planted_tagger_rows(160, 1),
            rows_dev=planted_tagger_rows(40, 2),
            base_model=None,
            seed=3,
            hyperparameters=dict(TINY, epochs=3),
            output_dir=tmp_path,
        )
    )
    dev = planted_tagger_rows(400, 5)
    texts = [r["sentence"] for r in dev]
    monkeypatch.setenv("ARGORA_TAGGER_ENGINE", "torch")
    torch32 = tagger.load(tmp_path, quantize=False)
    torch8 = tagger.load(tmp_path, quantize=True)
    assert (torch32.engine, torch8.engine) == ("torch", "torch")
    monkeypatch.setenv("ARGORA_TAGGER_ENGINE", "onnx")
    onnx32 = tagger.load(tmp_path, quantize=False)
    onnx8 = tagger.load(tmp_path, quantize=True)
    assert (onnx32.engine, onnx32.precision, onnx8.engine, onnx8.precision) == ("onnx", "fp32", "onnx", "int8")
    assert sorted(p.name for p in (tmp_path / "onnx").iterdir()) == ["model.fp32.onnx", "model.int8.onnx"]
    # fp32 through ONNX Runtime is the same model: the same tags, the same spans
    assert [p["tags"] for p in onnx32.predict(texts)] == [p["tags"] for p in torch32.predict(texts)]
    # int8: F1 within half a point of fp32, as for torch's int8 (400 sentences: a few tokens are not a point)
    f32 = tagger.evaluate(torch32, dev)["f1_macro"]
    assert abs(tagger.evaluate(onnx8, dev)["f1_macro"] - f32) <= 0.005
    assert abs(tagger.evaluate(torch8, dev)["f1_macro"] - f32) <= 0.005
    # a second load reuses the cached files
    mtime = (tmp_path / "onnx" / "model.int8.onnx").stat().st_mtime_ns
    again = tagger.load(tmp_path, quantize=True)
    assert again.engine == "onnx" and (tmp_path / "onnx" / "model.int8.onnx").stat().st_mtime_ns == mtime
    monkeypatch.setenv("ARGORA_TAGGER_ENGINE", "tensorrt")
    with pytest.raises(ValueError, match="engine"):
        tagger.load(tmp_path)
