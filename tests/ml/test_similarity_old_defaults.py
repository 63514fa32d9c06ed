"""The [CLS] cross-encoder with the defaults before issue 23 (the paper's BERT-base values) on the UKP ASPECT subset of
tests/ml/test_similarity_recipe.py stays below the Jaccard baseline, and AugSBERT checks its teacher against the
Jaccard baseline and the untrained bi-encoder: warns (recorded in ``info``, printed on stderr) or refuses. A module
of its own so that pytest-xdist (``--dist loadfile``) can run it beside the recipe module's long trainings."""

from __future__ import annotations

import pytest

from ml import errors
from tests.ml.test_similarity_recipe import MAX_LENGTH, needs_ukp, subset, train


@needs_ukp
@pytest.mark.slow
@pytest.mark.minutes
def test_old_cross_encoder_defaults_stay_below_jaccard_and_augsbert_warns(tmp_path, capsys):
    """The defaults before issue 23 (lr 1e-5, head at the same rate, pooler as loaded, 1 epoch) on the same subset:
    the cross-encoder does not beat word overlap, and AugSBERT with it as teacher says so."""
    rows_train, dev, test = subset()
    old = {
        "architecture": "cls",
        "lr": 1e-5,
        "head_lr": 0.0,
        "pooler_init": "keep",
        "epochs": 1,
        "max_length": MAX_LENGTH,
    }
    cross = train("crossencoder", rows_train, dev, test, tmp_path / "cross", old)
    print(
        f"\nold defaults: cross-encoder test {cross.test_metrics['spearman']:.1f}, "
        f"Jaccard {cross.test_metrics['jaccard_spearman']:.1f}"
    )
    assert cross.test_metrics["spearman"] < cross.test_metrics["jaccard_spearman"]
    aug = train(
        "augsbert",
        rows_train[:64],
        dev,
        test[:40],
        tmp_path / "aug",
        {"cross_encoder": str(tmp_path / "cross" / "model"), "max_steps": 2, "k": 1, "max_length": MAX_LENGTH},
    )
    assert aug.info["teacher_ok"] is False and "not above" in aug.info["warnings"][0]
    assert "WARNING: AugSBERT teacher check" in capsys.readouterr().err
    with pytest.raises(errors.TrainerError, match="teacher_check=refuse"):
        train(
            "augsbert",
            rows_train[:64],
            dev,
            test[:40],
            tmp_path / "aug2",
            {"cross_encoder": str(tmp_path / "cross" / "model"), "teacher_check": "refuse", "max_length": MAX_LENGTH},
        )
