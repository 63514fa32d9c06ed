"""The field's public corpora import as they are published (issue 18, item 3): IBM ArgQ-Rank-30k, IBM ArgKP (both
shapes the releases ship), args.me JSON; and a large JSONL file streams with bounded memory (item 4). Every file here
is written by the test in the corpus's real shape; no real corpus is committed."""

from __future__ import annotations

import csv
import json
import tracemalloc
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers import ImportFailed, expand_paths, import_file
from corpus.models import Sentence, Topic
from corpus.releases import build_release, release_path

pytestmark = pytest.mark.django_db

ARGQ_HEADER = ["argument", "topic", "set", "WA", "MACE-P", "stance_WA", "stance_WA_conf"]
ARGQ_ROWS = [
    [
        "Cloning could save endangered species from extinction.",
        "We should ban human cloning",
        "train",
        "0.846",
        "0.891",
        "-1",
        "1.0",
    ],
    [
        'Cloning is "playing god", and we must not do that.',
        "We should ban human cloning",
        "dev",
        "0.5",
        "0.4",
        "1",
        "0.8",
    ],
    [
        "Marriage is an outdated institution, with commas, and quotes.",
        "We should abandon marriage",
        "test",
        "0.71",
        "0.66",
        "1",
        "1.0",
    ],
]


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("import_corpus", *map(str, args), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args) -> str:
    err = StringIO()
    with pytest.raises(CommandError) as info:
        call_command("import_corpus", *map(str, args), stdout=StringIO(), stderr=err)
    assert info.value.returncode == 2
    return str(info.value) + "\n" + err.getvalue()


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- IBM ArgQ-Rank-30k ------------------------------------------------------------------------------------


def test_argq_arguments_import_with_stance_and_quality_and_export_with_them(tmp_path, tmp_artifacts):
    path = write_csv(tmp_path / "arg_quality_rank_30k.csv", ARGQ_HEADER, ARGQ_ROWS)
    out, _ = run(path, "--format", "ibm-argq")
    assert "created 2 topics, 3 sentences" in out
    rows = {s.text: s for s in Sentence.objects.select_related("topic")}
    first = rows["Cloning could save endangered species from extinction."]
    assert (first.topic.name, first.stance, first.source) == ("We should ban human cloning", "con", "ibm-argq-rank-30k")
    assert first.metadata == {
        "argq": {"set": "train", "WA": 0.846, "MACE-P": 0.891, "stance_WA": -1, "stance_WA_conf": 1.0}
    }
    assert rows['Cloning is "playing god", and we must not do that.'].stance == "pro"

    out, _ = run(path, "--format", "ibm-argq")  # idempotent
    assert "created nothing; skipped 3 already present" in out and Sentence.objects.count() == 3

    release = build_release("argq", "1.0", config={})
    exported = {r["sentence"]: r for r in read_jsonl(release_path(release) / "sentences.jsonl")}
    assert exported[first.text]["metadata"]["argq"]["WA"] == 0.846
    assert exported[first.text]["stance"] == "con" and exported[first.text]["topic"] == "We should ban human cloning"


@pytest.mark.parametrize(
    "row, line_reason",
    [
        (["Fine argument.", "Topic", "train", "0.5", "0.5", "2", "1"], '"stance_WA" must be 1 (pro) or -1 (con)'),
        (["Fine argument.", "Topic", "train", "1.3", "0.5", "1", "1"], '"WA" 1.3 is outside [0, 1]'),
        (["Fine argument.", "Topic", "train", "high", "0.5", "1", "1"], "\"WA\" must be a number, got 'high'"),
        (["Fine argument.", "Topic", "holdout", "0.5", "0.5", "1", "1"], '"set" must be one of train, dev, test'),
        (["", "Topic", "train", "0.5", "0.5", "1", "1"], '"argument" is empty'),
    ],
)
def test_a_bad_argq_row_is_exit_2_with_its_line_and_nothing_written(tmp_path, row, line_reason):
    path = write_csv(tmp_path / "argq.csv", ARGQ_HEADER, ARGQ_ROWS + [row])
    message = refused(path, "--format", "ibm-argq")
    assert f"{path}:5: " in message and line_reason in message, message
    assert not Sentence.objects.exists() and not Topic.objects.exists()


def test_an_argq_file_without_the_quality_columns_is_refused_at_line_1(tmp_path):
    path = write_csv(tmp_path / "argq.csv", ["argument", "topic", "stance_WA"], [["A.", "T", "1"]])
    assert f'{path}:1: missing column "WA"' in refused(path, "--format", "ibm-argq")


# --- IBM ArgKP ----------------------------------------------------------------------------------------------

KP_TOPIC = "Routine child vaccinations should be mandatory"
ARGKP_2021 = [  # ArgKP-2021_dataset.csv: one row per (argument, key point) pair
    [KP_TOPIC, "Vaccines protect children from deadly diseases.", "Vaccines save lives", "1", "1"],
    [KP_TOPIC, "Vaccines protect children from deadly diseases.", "Parents should decide", "1", "0"],
    [KP_TOPIC, "Parents, not the state, should choose what goes into a child.", "Parents should decide", "-1", "1"],
    [KP_TOPIC, "Parents, not the state, should choose what goes into a child.", "Vaccines save lives", "-1", "0"],
]


def test_argkp_pairs_file_is_one_sentence_per_argument_with_its_key_points(tmp_path):
    path = write_csv(
        tmp_path / "ArgKP-2021_dataset.csv", ["topic", "argument", "key_point", "stance", "label"], ARGKP_2021
    )
    out, _ = run(path, "--format", "ibm-argkp")
    assert "created 1 topics, 2 sentences" in out
    pro = Sentence.objects.get(text="Vaccines protect children from deadly diseases.")
    assert (pro.stance, pro.source, pro.topic.name) == ("pro", "ibm-argkp", KP_TOPIC)
    assert pro.metadata == {
        "argkp": {
            "key_points": [
                {"key_point": "Vaccines save lives", "label": 1},
                {"key_point": "Parents should decide", "label": 0},
            ]
        }
    }
    assert Sentence.objects.get(text__startswith="Parents, not").stance == "con"


def test_argkp_rows_of_one_argument_must_agree_on_its_stance(tmp_path):
    rows = ARGKP_2021[:1] + [[KP_TOPIC, "Vaccines protect children from deadly diseases.", "X", "-1", "0"]]
    path = write_csv(tmp_path / "kp.csv", ["topic", "argument", "key_point", "stance", "label"], rows)
    assert f"{path}:3: this argument has stance con here but pro on line 2" in refused(path, "--format", "ibm-argkp")
    assert not Sentence.objects.exists()


def argkp_split(folder, name, args, key_points, labels):
    write_csv(folder / f"arguments_{name}.csv", ["arg_id", "argument", "topic", "stance"], args)
    write_csv(folder / f"key_points_{name}.csv", ["key_point_id", "key_point", "topic", "stance"], key_points)
    write_csv(folder / f"labels_{name}.csv", ["arg_id", "key_point_id", "label"], labels)


def argkp_folder(tmp_path, *, broken_dev: bool = False):
    folder = tmp_path / "kpm_data"
    folder.mkdir()
    topic = "We should abandon marriage"
    argkp_split(
        folder,
        "train",
        [
            ["arg_0_0", "Marriage is an outdated institution, with commas, and quotes.", topic, "1"],
            ["arg_0_1", "Marriage gives children a stable home.", topic, "-1"],
        ],
        [["kp_0_0", "Marriage is outdated", topic, "1"], ["kp_0_1", "Marriage is good for children", topic, "-1"]],
        [["arg_0_0", "kp_0_0", "1"], ["arg_0_1", "kp_0_1", "1"]],
    )
    argkp_split(
        folder,
        "dev",
        [["arg_1_0", "Homeschooling lets children learn at their own pace.", "We should ban homeschooling", "-1"]],
        [["kp_1_0", "Homeschooling can be tailored", "We should ban homeschooling", "-1"]],
        [["arg_1_0", "kp_1_9" if broken_dev else "kp_1_0", "1"]],
    )
    return folder


def test_argkp_folder_reads_each_arguments_file_with_its_key_points_and_labels(tmp_path, tmp_artifacts):
    folder = argkp_folder(tmp_path)
    assert [p.name for p in expand_paths([folder], "ibm-argkp")] == ["arguments_dev.csv", "arguments_train.csv"]
    out, _ = run(folder, "--format", "ibm-argkp")
    assert "2: 2 imported, 0 already imported (nothing new), 0 refused" in out
    s = Sentence.objects.get(external_id="arg_0_1")
    assert s.stance == "con" and s.topic.name == "We should abandon marriage"
    assert s.metadata == {
        "argkp": {
            "arg_ids": ["arg_0_1"],
            "set": "train",
            "key_points": [{"key_point_id": "kp_0_1", "key_point": "Marriage is good for children", "label": 1}],
        }
    }
    assert Sentence.objects.get(external_id="arg_1_0").metadata["argkp"]["set"] == "dev"
    out, _ = run(folder, "--format", "ibm-argkp")
    assert "nothing new: every file was imported before" in out
    release = build_release("argkp", "1.0", config={})
    exported = {r["id"]: r for r in read_jsonl(release_path(release) / "sentences.jsonl")}
    assert exported["arg_0_1"]["metadata"] == s.metadata and exported["arg_0_1"]["stance"] == "con"


def test_argkp_a_label_naming_an_unknown_key_point_refuses_that_set_with_the_labels_line(tmp_path):
    folder = argkp_folder(tmp_path, broken_dev=True)
    message = refused(folder, "--format", "ibm-argkp")
    assert f"{folder / 'labels_dev.csv'}:2: key_point_id 'kp_1_9' is not in key_points_dev.csv" in message
    assert "1 of 2 files refused" in message
    assert not Sentence.objects.filter(external_id="arg_1_0").exists()  # nothing of the refused set
    assert Sentence.objects.filter(external_id__startswith="arg_0_").count() == 2  # the other set is in


def test_argkp_companion_alone_points_at_its_arguments_file(tmp_path):
    folder = argkp_folder(tmp_path)
    message = refused(folder / "labels_train.csv", "--format", "ibm-argkp")
    assert "labels_train.csv:1: this is an ArgKP labels file: import arguments_train.csv" in message


@pytest.mark.parametrize("argq_first", [True, False])
def test_argq_and_argkp_add_their_metadata_to_the_same_sentences(tmp_path, argq_first):
    """ArgKP's arguments are ArgQ-Rank-30k's: whichever comes second adds its key to the stored sentence."""
    argq, folder = write_csv(tmp_path / "argq.csv", ARGQ_HEADER, ARGQ_ROWS), argkp_folder(tmp_path)
    imports = [(argq, "ibm-argq"), (folder, "ibm-argkp")]
    first, second = imports if argq_first else imports[::-1]
    stored_source = "ibm-argq-rank-30k" if argq_first else "ibm-argkp"
    run(first[0], "--format", first[1])
    out, _ = run(second[0], "--format", second[1])
    assert (
        ("of them given this corpus's metadata  1" in out)
        if argq_first
        else ("skipped 1 already present (1 of them got this corpus's metadata)" in out)
    )
    s = Sentence.objects.get(text="Marriage is an outdated institution, with commas, and quotes.")
    assert set(s.metadata) == {"argq", "argkp"} and s.metadata["argq"]["WA"] == 0.71
    assert s.metadata["argkp"]["key_points"][0]["key_point"] == "Marriage is outdated"
    assert s.source == stored_source  # nothing stored is changed, only keys added
    out, _ = run(second[0], "--format", second[1])
    assert "nothing new" in out or "created nothing; skipped 3 already present" in out


# --- args.me JSON ---------------------------------------------------------------------------------------------

LONG = "Resolved: " + "the government should fund public transport in every city " * 5


def argsme_doc(premise_stance="CON"):
    return {
        "arguments": [
            {
                "premises": [
                    {"text": "Contraception lowers teen pregnancy rates.", "stance": "PRO", "annotations": []}
                ],
                "context": {
                    "sourceId": "c674",
                    "sourceTitle": "Debate Argument: Contraceptives",
                    "discussionTitle": "Contraceptive Forms for High School Students",
                    "sourceUrl": "https://www.debate.org/x",
                },
                "id": "c67482ba-2019-04-18T13:32:05Z-00000-000",
                "conclusion": "Contraceptive Forms for High School Students",
                "aspects": [],
            },
            {
                "premises": [{"text": "Schools are not clinics.", "stance": premise_stance}],
                "context": {"sourceId": "c674"},
                "id": "c67482ba-2019-04-18T13:32:05Z-00001-000",
                "conclusion": "Contraceptive Forms for High School Students",
            },
            {
                "premises": [{"text": "Buses cut congestion.", "stance": "PRO"}],
                "context": {},
                "id": "long-1",
                "conclusion": LONG,
            },
        ]
    }


def test_argsme_premises_become_sentences_on_their_conclusion(tmp_path, tmp_artifacts):
    path = tmp_path / "args-me.json"
    path.write_text(json.dumps(argsme_doc(), indent=2), encoding="utf-8")
    out, _ = run(path, "--format", "argsme-json")
    assert "created 2 topics, 3 sentences" in out
    s = Sentence.objects.get(text="Contraception lowers teen pregnancy rates.")
    assert (s.topic.name, s.stance, s.source, s.external_id) == (
        "Contraceptive Forms for High School Students",
        "pro",
        "args.me",
        "c67482ba-2019-04-18T13:32:05Z-00000-000",
    )
    assert s.metadata["argsme"]["context"]["sourceUrl"] == "https://www.debate.org/x"
    assert Sentence.objects.get(text="Schools are not clinics.").stance == "con"
    bus = Sentence.objects.get(text="Buses cut congestion.")
    assert len(bus.topic.name) <= 200 and bus.topic.name.endswith("…")
    assert bus.metadata["argsme"]["conclusion"] == " ".join(LONG.split())
    assert run(path, "--format", "argsme-json")[0].startswith(f"{path}: created nothing; skipped 3")
    release = build_release("argsme", "1.0", config={})
    exported = {r["sentence"]: r for r in read_jsonl(release_path(release) / "sentences.jsonl")}
    assert exported["Schools are not clinics."]["metadata"]["argsme"]["id"].endswith("00001-000")
    assert exported["Buses cut congestion."]["topic"] == bus.topic.name


def test_argsme_errors_name_the_line_of_the_argument(tmp_path):
    path = tmp_path / "args-me.json"
    path.write_text(json.dumps(argsme_doc("MAYBE"), indent=2), encoding="utf-8")
    text = path.read_text().splitlines()
    second = [n for n, t in enumerate(text, start=1) if t == "    {"][1]  # the line the 2nd argument opens on
    message = refused(path, "--format", "argsme-json")
    assert f'{path}:{second}: premises[0].stance must be "PRO" or "CON", got \'MAYBE\'' in message
    assert not Sentence.objects.exists()
    path.write_text(
        '{"arguments": [\n{"id": "a", "conclusion": "c", "premises": [{"text": "t", "stance": "PRO"}]},'
        '\n{"id": "b", "conclusion": \n}]}',
        encoding="utf-8",
    )
    assert f"{path}:4: invalid JSON" in refused(path, "--format", "argsme-json")
    path.write_text('{"version": 2}', encoding="utf-8")
    assert f'{path}:1: no "arguments" list' in refused(path, "--format", "argsme-json")


# --- large JSONL: streamed in batches, bounded memory, still all or nothing -----------------------------------


def jsonl_file(path, n, *, bad_last: bool = False, start: int = 0):
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(start, start + n):
            fh.write(
                json.dumps(
                    {
                        "topic": f"topic {i % 3}",
                        "sentence": f"Argument number {i} about it.",
                        "stance": "pro",
                        "id": f"a{i}",
                    }
                )
                + "\n"
            )
        if bad_last:
            fh.write('{"topic": "topic 0", "sentence": "Last one.", "stance": "perhaps"}\n')
    return path


def test_a_bad_line_after_several_written_batches_writes_nothing(tmp_path):
    path = jsonl_file(tmp_path / "big.jsonl", 11_000, bad_last=True)  # > 2 batches of 5,000 before the bad line
    with pytest.raises(ImportFailed) as info:
        import_file(path, "jsonl")
    assert (info.value.line, Sentence.objects.count(), Topic.objects.count()) == (11_001, 0, 0)


def test_rows_repeated_across_batches_are_skipped_and_a_second_run_adds_nothing(tmp_path):
    path = tmp_path / "repeats.jsonl"
    jsonl_file(path, 6_000)
    with open(path, "a", encoding="utf-8") as fh:  # the first rows again, in the second batch
        fh.write(jsonl_file(tmp_path / "head.jsonl", 10).read_text())
    summary = import_file(path, "jsonl")
    assert (summary.created["sentences"], summary.skipped) == (6_000, 10)
    assert import_file(path, "jsonl").skipped == 6_010 and Sentence.objects.count() == 6_000


def peak_memory(path) -> int:
    tracemalloc.start()
    try:
        import_file(path, "jsonl")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_stays_bounded_however_long_the_file(tmp_path):
    """Four times the rows, not four times the memory: only the batch being written is held."""
    small = peak_memory(jsonl_file(tmp_path / "small.jsonl", 5_000))
    large = peak_memory(jsonl_file(tmp_path / "large.jsonl", 20_000, start=10_000))
    assert Sentence.objects.count() == 25_000
    assert large < 1.5 * small, (small, large)
