"""``manage.py train crossencoder|biencoder|augsbert|tagger --data FILE`` on the public corpora as published (issue 18,
item 3): the BWS Argument Similarity Corpus CSV and the UKP ASPECT TSV (files and split folders), the argument-aspect
span corpus in CoNLL. Files are written by the tests in each real shape; training runs a couple of steps."""

from __future__ import annotations

import csv
import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ml.models import ModelVersion
from ml.similarity import data as D
from ml.trainers import tagger
from tests.ml.test_taggers import TINY

WORDS = "nuclear solar wind energy cheap safe waste cost power grid storage risk".split()
BWS_HEADER = ["id", "topic", "argument1", "argument2", "score"]
ASPECT_HEADER = "topic\tsentence_1\tsentence_2\tlabel\n"
LABELS = ["HS", "SS", "NS", "DTORCD"]


def bws_csv(path, n=24, *, split_column: str | None = None, seed=3):
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(BWS_HEADER + ([split_column] if split_column else []))
        for i in range(n):
            a, b = " ".join(rng.sample(WORDS, 4)), " ".join(rng.sample(WORDS, 4)) + ', "quoted", too'
            score = round(len(set(a.split()) & set(b.split())) / 4, 3)
            extra = [["train", "dev", "test"][i % 3]] if split_column else []
            writer.writerow([f"bws-{i}", ["Cloning", "Nuclear energy"][i % 2], a, b, score] + extra)
    return path


def aspect_tsv(path, n=24, *, header=True, seed=5, topics=("Wind power", "Gmo")):
    rng = random.Random(seed)
    lines = [ASPECT_HEADER] if header else []
    for i in range(n):
        a, b = " ".join(rng.sample(WORDS, 5)), '"' + " ".join(rng.sample(WORDS, 5))  # a quote opens a sentence
        lines.append(f"{topics[i % len(topics)]}\t{a}\t{b}\t{LABELS[i % 4]}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


# --- readers ------------------------------------------------------------------------------------------------


def test_bws_csv_rows_keep_ids_and_scores_and_a_split_column(tmp_path):
    rows = D.read_pairs(bws_csv(tmp_path / "BWS_Argument_Similarity_Corpus.csv"))
    assert len(rows) == 24 and rows[0]["pair_id"] == "bws-0" and rows[0]["topic"] == "Cloning"
    assert rows[0]["argument2"].endswith(', "quoted", too') and all(0 <= r["score"] <= 1 for r in rows)
    train, dev = D.rows_from_file(tmp_path / "BWS_Argument_Similarity_Corpus.csv")  # no split: in-topic cut
    assert train and dev and {r["split"] for r in dev} <= {"dev", "test"}
    train, dev = D.rows_from_file(bws_csv(tmp_path / "with_split.csv", split_column="set"))
    assert [r["pair_id"] for r in train] == [f"bws-{i}" for i in range(0, 24, 3)]
    assert [(r["pair_id"], r["split"]) for r in dev[:2]] == [("bws-1", "dev"), ("bws-4", "dev")]
    assert sum(r["split"] == "test" for r in dev) == 8


def test_split_folders_of_csv_and_tsv_files(tmp_path):
    for folder, make in (
        ("bws", lambda p, n: bws_csv(p, n)),
        ("splits/0", lambda p, n: aspect_tsv(p, n, header=False)),
    ):
        root = tmp_path / folder
        root.mkdir(parents=True)
        for part, n in (("train", 12), ("dev", 4), ("test", 4)):
            make(root / f"{part}.{'csv' if folder == 'bws' else 'tsv'}", n)
        parts = D.load_splits(root)
        assert [len(parts[p]) for p in D.SPLITS] == [12, 4, 4]
        assert {r["split"] for r in parts["test"]} == {"test"}


def test_aspect_tsv_labels_become_the_papers_binary_scores(tmp_path):
    with_header = D.read_pairs(aspect_tsv(tmp_path / "UKP_ASPECT.tsv"))
    without = D.read_pairs(aspect_tsv(tmp_path / "train.tsv", header=False))
    assert [r["argument1"] for r in with_header] == [r["argument1"] for r in without]
    assert {r["label"]: r["score"] for r in with_header} == {"HS": 1.0, "SS": 1.0, "NS": 0.0, "DTORCD": 0.0}
    assert with_header[0]["argument2"].startswith('"') and with_header[0]["pair_id"] == "L2"
    assert without[0]["pair_id"] == "L1"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name, content, where, reason",
    [
        (
            "bad.csv",
            "id,topic,argument1,argument2,score\nb1,T,a a,b b,0.5\nb2,T,a a,b b,1.5\n",
            3,
            "score 1.5 is outside [0, 1]",
        ),
        (
            "bad.csv",
            "id,topic,argument1,argument2,score,split\nb1,T,a a,b b,0.5,train\nb2,T,a a,b b,0.5,holdout\n",
            3,
            "split 'holdout' is not one of train, dev, test",
        ),
        ("bad.csv", "id,topic,argument_a,argument2,score\n", 1, 'missing column "argument1"'),
        (
            "bad.tsv",
            ASPECT_HEADER + "T\ta a\tb b\tHS\nT\ta a\tb b\tMAYBE\n",
            3,
            "label 'MAYBE' is not one of HS, SS, NS, DTORCD",
        ),
        ("bad.tsv", "T\ta a\tb b\tHS\nT\ta a\tHS\n", 2, "expected 4 tab-separated columns"),
        ("bad.tsv", b"T\ta a\tb b\tHS\n" + b"T\tcaf\xe9\tb\tNS\n", 2, "invalid UTF-8"),
    ],
)
def test_a_bad_pair_file_exits_2_with_file_line_and_trains_nothing(
    tmp_path, tmp_artifacts, name, content, where, reason
):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CommandError) as info:
        call_command("train", "crossencoder", "--data", str(path), stdout=StringIO())
    assert info.value.returncode == 2
    assert str(info.value).startswith(f"{path}:{where}: ") and reason in str(info.value), str(info.value)
    assert not ModelVersion.objects.exists()


# --- training from the published files (tiny) -----------------------------------------------------------------


def train(kind, data, *extra):
    out = StringIO()
    call_command(
        "train", kind, "--data", str(data), "--json", "--hp", "max_steps=2", "--hp", "max_length=24", *extra, stdout=out
    )
    outcome = json.loads(out.getvalue())
    assert outcome["status"] == "ready", outcome
    return outcome


@pytest.mark.slow
@pytest.mark.django_db
def test_crossencoder_biencoder_and_augsbert_train_from_the_published_files(tmp_path, tmp_artifacts):
    cross = train("crossencoder", bws_csv(tmp_path / "BWS_Argument_Similarity_Corpus.csv", split_column="split"))
    assert cross["metrics"]["test"]["n"] > 0 and cross["metrics"]["info"]["n_gold"] == 8

    fold = tmp_path / "splits" / "0"
    fold.mkdir(parents=True)
    aspect_tsv(fold / "train.tsv", 16, header=False, topics=("Wind power", "Gmo"))
    aspect_tsv(fold / "dev.tsv", 8, header=False, topics=("Drones",))
    aspect_tsv(fold / "test.tsv", 8, header=False, topics=("Big data",))
    bi = train("biencoder", fold)
    assert bi["metrics"]["info"]["setting"] == "cross-topic" and bi["metrics"]["test"]["n"] > 0

    aug = train("augsbert", aspect_tsv(tmp_path / "UKP_ASPECT.tsv", 32), "--strategy", "bm25", "--k", "2")
    assert aug["metrics"]["info"]["n_silver"] > 0
    version = ModelVersion.objects.get(pk=aug["version"])
    assert version.n_train > 0


# --- CoNLL aspect spans for the tagger ---------------------------------------------------------------------------

ASPECT_WORDS = ["costs", "safety", "jobs", "pollution"]


def conll_file(path, n, seed):
    rng = random.Random(seed)
    blocks = []
    for i in range(n):
        left = rng.sample(["we", "should", "really", "oppose", "it", "now"], 3) + [f"case{i}"]
        aspect = rng.choice(ASPECT_WORDS)
        tokens = [(w, "O") for w in left] + [
            ("because", "O"),
            ("of", "O"),
            (aspect, "B-ASP"),
            ("and", "O"),
            ("more", "B-ASP"),
            ("money", "I-ASP"),
            (",", "O"),
            ("sadly", "O"),
            (".", "O"),
        ]
        blocks.append("".join(f"{t}\t{label}\n" for t, label in tokens))
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def test_conll_rows_are_app_f_rows_with_spans_on_the_rebuilt_sentence(tmp_path):
    rows = tagger.read_rows(conll_file(tmp_path / "nuclear_energy.conll", 3, 1))
    row = rows[0]
    assert row["topic"] == "nuclear energy" and row["sentence"].endswith(" and more money, sadly.")
    for pos, text in zip(row["aspect_pos"], row["aspect_pos_string"]):
        begin, length = map(int, pos.strip("()").split(","))
        assert row["sentence"][begin : begin + length] == text
    assert row["aspect_pos_string"][1] == "more money"
    text, spans = tagger.row_text_spans(row)
    assert [text[b:e] for b, e in spans] == row["aspect_pos_string"]


def test_an_experiment_folder_of_the_published_corpus_is_its_split(tmp_path):
    """``experiments/exp1_mw/corpora/conll_gold_token/{train,dev,test}.txt`` as the corpus publishes them: numbered
    tokens labelled with aspect categories; train / dev / test are the split and the topic is the folder's."""
    folder = tmp_path / "exp1_mw" / "corpora" / "conll_gold_token"
    folder.mkdir(parents=True)
    for split, words in (("train", ["wages", "rise"]), ("dev", ["prices", "climb"]), ("test", ["jobs", "go"])):
        body = f"1\t{words[0]}\tPRICES\tTrue\n2\t{words[1]}\tO\tTrue\n3\t.\tO\tFalse\n\n"
        (folder / f"{split}.txt").write_text(body * 2, encoding="utf-8")
    train, dev = tagger.rows_from_file(folder)
    assert [r["sentence"] for r in train] == ["wages rise."]  # the same sentence twice with the same spans: once
    assert [(r["sentence"], r.get("split"), r["topic"]) for r in dev] == [
        ("prices climb.", None, "minimum wage"),
        ("jobs go.", "test", "minimum wage"),
    ]
    assert train[0]["aspect_pos_string"] == ["wages"]


@pytest.mark.slow
@pytest.mark.django_db
def test_train_tagger_from_a_folder_of_conll_files(tmp_path, tmp_artifacts):
    folder = tmp_path / "aspects"
    folder.mkdir()
    conll_file(folder / "nuclear_energy.conll", 24, 1)
    conll_file(folder / "gun_control.conll", 24, 2)
    out = StringIO()
    call_command(
        "train",
        "tagger",
        "--data",
        str(folder),
        "--json",
        "--epochs",
        "1",
        "--hp",
        "from_config=" + json.dumps(TINY["from_config"]),
        "--hp",
        "batch_size=8",
        "--hp",
        "max_length=32",
        stdout=out,
    )
    outcome = json.loads(out.getvalue())
    version = ModelVersion.objects.get(pk=outcome["version"])
    assert outcome["status"] == version.status == "ready", version.error
    assert version.n_train + version.n_dev == 48 and "f1_macro" in outcome["metrics"]["dev"]


@pytest.mark.django_db
def test_a_bad_conll_file_exits_2_with_file_line(tmp_path, tmp_artifacts):
    path = tmp_path / "bad.conll"
    path.write_text("Nuclear\tO\npower\tB-ASP\n\nIt\tO\nis\tFalse\n", encoding="utf-8")
    with pytest.raises(CommandError) as info:
        call_command("train", "tagger", "--data", str(path), stdout=StringIO())
    assert info.value.returncode == 2
    assert str(info.value).startswith(f"{path}:5: label 'False' is not a label: O, B or I")
    assert not ModelVersion.objects.exists()
