"""Item builders for the rating task types: a generation run's JSONL outputs and imported corpus debate trees.

Files (UTF-8, one JSON object a line; blank lines ignored)::

    PAIRS.jsonl    {"topic": "...", "stance": "pro", "a": {"system": "arg-ctrl", "text": "..."},
                    "b": {"system": "reference", "text": "..."}}                 (+ optional "id")
    DEBATES.jsonl  {"id": "d1", "system": "human" | "<model>", "topic": "..." (optional),
                    "turns": [{"speaker": "Alice", "text": "..."}, {"speaker": "Bob", "text": "..."}, ...]}

Reading is all-or-nothing: every row is checked first, the first bad one raises
:class:`corpus.importers.base.ImportFailed` (``file:line: reason``) and nothing is written. Then, in one transaction,
the new rows become items (rows whose key the project already has are skipped, so a re-import adds nothing) and the
new items are put into HITs.

Corpus references: :func:`read_corpus_pairs` reads a file of candidate (e.g. generated) arguments,
``{"topic", "stance": "pro" | "con", "text"}`` (+ optional ``"id"``, ``"system"``), and pairs each with a reference
argument from the corpus (:class:`corpus.models.Sentence`) of the same topic (by name, case-insensitive) and stance,
chosen seeded: the references of a topic and stance are shuffled with the seed and handed out in turn, so a
re-run gives the same pairs and references repeat only when candidates outnumber them. A row whose topic is not in
the corpus or that has no reference argument of its stance is refused (``file:line: reason``, nothing written).

Debate trees: :func:`tree_debates` turns root-to-leaf paths of :class:`corpus.models.DebateTree` rows into human
debates (debate trees §3): the root's text is the topic; the next ``length`` nodes of a path are the turns, the
speakers alternating (Alice, Bob, ...). Paths shorter than ``length`` are left out; longer ones are cut, and paths that
share the same first ``length`` turns give one debate. :func:`record_debates` reads the same paths from a parsed Kialo
export before it is imported (the studio's preview), and :func:`tree_pairs` makes pairwise items from one: the
supportive against the contradicting reply to the same prompt (debate trees §2.2, Table 2).
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation import services
from annotation.models import Item, Project
from annotation.selectors import project_of_type
from argora.jsonl import read_jsonl
from corpus.importers import import_file
from corpus.importers.base import ImportFailed, TreeRecord
from corpus.importers.parsers import parse_kialo
from corpus.importers.readers import read_text
from corpus.models import DebateNode, DebateTree, Sentence, Stance, Topic

from . import LIKERT, PAIRWISE, RatingsError

SPEAKERS = ("Alice", "Bob")
MAX_TEXT = 20000


# --- reading files --------------------------------------------------------------------------------
def _rows(path) -> Iterator[tuple[int, dict]]:
    return read_jsonl(path, error=ImportFailed, require_rows=True, text=read_text(path))


def _text(path, line, obj: dict, name: str, *, where: str = "") -> str:
    value = obj.get(name)
    label = f"{where}.{name}" if where else name
    if value is None:
        raise ImportFailed(path, line, f'missing "{label}"')
    if not isinstance(value, str):
        raise ImportFailed(path, line, f'"{label}" must be a string, got {type(value).__name__}')
    value = value.strip()
    if not value:
        raise ImportFailed(path, line, f'"{label}" is empty')
    if len(value) > MAX_TEXT:
        raise ImportFailed(path, line, f'"{label}" is longer than {MAX_TEXT} characters')
    return value


def _digest(*parts: str) -> str:
    return hashlib.sha1("\x00".join(parts).encode("utf-8")).hexdigest()[:20]


def read_pairs(path) -> list[dict]:
    """Item payloads of a PAIRS.jsonl file (``ImportFailed`` on the first bad row)."""
    payloads, occurrences = [], Counter()
    for line, obj in _rows(path):
        topic = _text(path, line, obj, "topic")
        stance = _text(path, line, obj, "stance")
        sides = {}
        for side in ("a", "b"):
            arg = obj.get(side)
            if not isinstance(arg, dict):
                raise ImportFailed(path, line, f'"{side}" must be an object {{"system", "text"}}')
            sides[side] = {
                "system": _text(path, line, arg, "system", where=side),
                "text": _text(path, line, arg, "text", where=side),
            }
        if sides["a"]["system"] == sides["b"]["system"]:
            raise ImportFailed(
                path,
                line,
                f'"a" and "b" come from the same system "{sides["a"]["system"]}"; a pair compares two systems',
            )
        if sides["a"]["text"] == sides["b"]["text"]:
            raise ImportFailed(path, line, '"a" and "b" have the same text')
        if obj.get("id") not in (None, ""):
            key = f"pair:{str(obj['id'])[:150]}"
        else:
            base = _digest(
                topic, stance, sides["a"]["system"], sides["a"]["text"], sides["b"]["system"], sides["b"]["text"]
            )
            occurrences[base] += 1
            key = f"pair:{base}#{occurrences[base]}"
        payloads.append({"topic": topic, "stance": stance, "a": sides["a"], "b": sides["b"], "key": key, "_line": line})
    _unique_keys(path, payloads)
    return payloads


REFERENCE_SYSTEM = "reference"


def read_corpus_pairs(
    path,
    *,
    system: str | None = None,
    seed: int = 13,
    source: str | None = None,
    reference_system: str = REFERENCE_SYSTEM,
) -> list[dict]:
    """Item payloads pairing each candidate argument of ``path`` with a corpus reference (module docstring).

    ``system`` names the candidates' system when a row has none (default ``"candidate"``); ``source`` keeps only
    corpus sentences whose ``source`` is that; ``ImportFailed`` on the first bad row, before anything is written."""
    rows = []
    for line, obj in _rows(path):
        topic_name = _text(path, line, obj, "topic")
        stance = _text(path, line, obj, "stance").lower()
        if stance not in (Stance.PRO, Stance.CON):
            raise ImportFailed(path, line, f'"stance" must be "pro" or "con", got "{stance}"')
        text = _text(path, line, obj, "text")
        cand_system = obj.get("system", system or "candidate")
        if not isinstance(cand_system, str) or not cand_system.strip():
            raise ImportFailed(path, line, '"system" must be a non-empty string')
        cand_system = cand_system.strip()
        if cand_system == reference_system:
            raise ImportFailed(
                path,
                line,
                f'"system" is "{cand_system}", the name of the corpus references; a pair compares two systems',
            )
        rows.append((line, obj, topic_name, stance, text, cand_system))
    topics = {
        name: Topic.objects.filter(name__iexact=name).order_by("id").first() for name in {r[2].lower() for r in rows}
    }
    pools: dict[tuple[int, str], list[tuple[int, str]]] = {}
    used: Counter = Counter()
    payloads, occurrences = [], Counter()
    for line, obj, topic_name, stance, text, cand_system in rows:
        topic = topics.get(topic_name.lower())
        if topic is None:
            raise ImportFailed(
                path,
                line,
                f'topic "{topic_name}" is not in the corpus (import its arguments first or check the spelling)',
            )
        key = (topic.pk, stance)
        if key not in pools:
            qs = Sentence.objects.filter(topic=topic, stance=stance)
            if source:
                qs = qs.filter(source=source)
            pool = list(qs.order_by("id").values_list("id", "text"))
            random.Random(f"{seed}:{topic.pk}:{stance}").shuffle(pool)
            pools[key] = pool
        pool = [(sid, t) for sid, t in pools[key] if t.strip() != text]
        if not pool:
            where = f" with source {source!r}" if source else ""
            raise ImportFailed(
                path,
                line,
                f'no reference argument in the corpus for topic "{topic.name}" and stance '
                f"{stance}{where} (other than this text)",
            )
        sentence_id, ref_text = pool[used[key] % len(pool)]
        used[key] += 1
        sides = {
            "a": {"system": cand_system, "text": text},
            "b": {"system": reference_system, "text": ref_text.strip()[:MAX_TEXT]},
        }
        if obj.get("id") not in (None, ""):
            pair_key = f"pair:{str(obj['id'])[:150]}"
        else:
            base = _digest(topic.name, stance, cand_system, text, reference_system, sides["b"]["text"])
            occurrences[base] += 1
            pair_key = f"pair:{base}#{occurrences[base]}"
        payloads.append(
            {
                "topic": topic.name,
                "stance": stance,
                "a": sides["a"],
                "b": sides["b"],
                "key": pair_key,
                "source": {"sentence": sentence_id},
                "_line": line,
            }
        )
    _unique_keys(path, payloads)
    return payloads


def read_debates(path) -> list[dict]:
    """Item payloads of a DEBATES.jsonl file (``ImportFailed`` on the first bad row)."""
    payloads = []
    for line, obj in _rows(path):
        raw_id = obj.get("id")
        if raw_id is None or isinstance(raw_id, (bool, dict, list)) or not str(raw_id).strip():
            raise ImportFailed(path, line, 'missing "id" (a string or number naming the debate)')
        debate_id = str(raw_id).strip()[:150]
        system = _text(path, line, obj, "system")
        topic = str(obj.get("topic") or "").strip()
        turns = obj.get("turns")
        if not isinstance(turns, list):
            raise ImportFailed(path, line, '"turns" must be a list of {"speaker", "text"} objects')
        if len(turns) < 2:
            raise ImportFailed(path, line, f"a debate needs at least 2 turns, got {len(turns)}")
        cleaned = []
        for n, turn in enumerate(turns, start=1):
            if not isinstance(turn, dict):
                raise ImportFailed(path, line, f'turn {n} must be an object {{"speaker", "text"}}')
            cleaned.append(
                {
                    "speaker": _text(path, line, turn, "speaker", where=f"turns[{n}]"),
                    "text": _text(path, line, turn, "text", where=f"turns[{n}]"),
                }
            )
        payloads.append(
            {
                "debate_id": debate_id,
                "system": system,
                "topic": topic,
                "turns": cleaned,
                "key": f"debate:{debate_id}",
                "_line": line,
            }
        )
    _unique_keys(path, payloads)
    return payloads


def _unique_keys(path, payloads: list[dict]) -> None:
    first: dict[str, int] = {}
    for p in payloads:
        if p["key"] in first:
            raise ImportFailed(
                path, p["_line"], f'duplicate id: "{p["key"].split(":", 1)[1]}" is also on line {first[p["key"]]}'
            )
        first[p["key"]] = p["_line"]


# --- debate trees ---------------------------------------------------------------------------------
def tree_debates(trees=None, *, length: int = 10, limit: int | None = None) -> list[dict]:
    """Human debates (item payloads) from root-to-leaf paths of debate trees (all trees when ``trees`` is None)."""
    if length < 2:
        raise RatingsError("--length: a debate needs at least 2 turns")
    qs = DebateTree.objects.all().order_by("id") if trees is None else trees
    out: list[dict] = []
    for tree in qs:
        nodes = list(
            DebateNode.objects.filter(tree=tree)
            .order_by("id")
            .values("id", "parent_id", "path", "depth", "stance", "text")
        )
        for root, turns in _debate_paths(nodes, length):
            out.append(_tree_payload(tree.pk, tree.title, root, turns))
            if limit is not None and len(out) >= limit:
                return out
    return out


def record_debates(tree, *, length: int = 10, limit: int | None = None, tree_pk: Any = "<new>") -> list[dict]:
    """:func:`tree_debates` for a parsed Kialo tree (:class:`corpus.importers.base.TreeRecord`, nothing written):
    the same paths in the same order; ``tree_pk`` stands in the debate ids for the tree's id once imported."""
    if length < 2:
        raise RatingsError("--length: a debate needs at least 2 turns")
    nodes = [
        {"id": n.path, "parent_id": n.parent_path, "path": n.path, "depth": n.depth, "stance": n.stance, "text": n.text}
        for n in sorted(tree.nodes, key=lambda n: n.depth)
    ]  # the writer's id order
    out: list[dict] = []
    for root, turns in _debate_paths(nodes, length):
        out.append(_tree_payload(tree_pk, tree.title, root, turns))
        if limit is not None and len(out) >= limit:
            break
    return out


def _debate_paths(nodes: list[dict], length: int) -> Iterator[tuple[dict, list[dict]]]:
    """``(root, turns)`` of every root-to-leaf path of one tree cut to ``length`` turns (the nodes below the root),
    depth first in the nodes' order; shorter paths are left out, paths sharing their first turns come once."""
    children: dict[Any, list[dict]] = {}
    for node in nodes:
        children.setdefault(node["parent_id"], []).append(node)
    seen: set[tuple] = set()
    for root in children.get(None, []):
        stack = [(root, [])]
        while stack:
            node, path = stack.pop()
            kids = children.get(node["id"], [])
            turns = path if node is root else path + [node]
            if len(turns) == length or (not kids and len(turns) >= length):
                ids = tuple(n["id"] for n in turns[:length])
                if ids not in seen:
                    seen.add(ids)
                    yield root, turns[:length]
                continue
            for kid in reversed(kids):
                stack.append((kid, turns))


def _tree_payload(tree_pk, title: str, root: dict, turns: list[dict]) -> dict:
    last = turns[-1]["path"]
    debate_id = f"tree{tree_pk}:{last}:{len(turns)}"
    return {
        "debate_id": debate_id,
        "system": "human",
        "topic": root["text"],
        "turns": [
            {"speaker": SPEAKERS[n % 2], "text": node["text"], "stance": node["stance"]} for n, node in enumerate(turns)
        ],
        "key": f"debate:{debate_id}",
        "source": {"tree": tree_pk, "title": title, "path": last},
    }


def read_kialo(path, *, topic: str | None = None, source: str | None = None) -> TreeRecord:
    """The debate tree of a Kialo text export, checked by the corpus's parser (``file:line: reason``); nothing is
    written. ``topic``: the corpus topic the tree is linked to (none by default); ``source``: stored as the tree's
    source (default: the file's name)."""
    return parse_kialo(path, read_text(path), topic=topic or None, source=source or Path(str(path)).name).trees[0]


def import_kialo(path, *, topic: str | None = None, source: str | None = None, progress=None) -> DebateTree:
    """Import a Kialo text export into the corpus (:func:`corpus.importers.import_file`, all or nothing; a tree
    imported before is reused as it is) and return its :class:`~corpus.models.DebateTree`."""
    tree = read_kialo(path, topic=topic, source=source)
    import_file(
        path,
        "kialo",
        topic=topic or None,
        source=source or Path(str(path)).name,
        **({"progress": progress} if progress is not None else {}),
    )
    return DebateTree.objects.get(content_hash=tree.content_hash)


# Pairwise pairs from a debate tree: the two single-node responses of debate-trees Table 2 to the same prompt.
SUPPORTIVE, CONTRADICTING = "supportive", "contradicting"
PAIR_STANCE = "one supports it, one refutes it"


def tree_pairs(tree, *, limit: int | None = None) -> list[dict]:
    """Pairwise payloads from a parsed debate tree (:class:`corpus.importers.base.TreeRecord`): for every prompt of
    the supportive / contradicting strategies of debate-trees Table 2 (``[Pro Con][Pro]*``: a thesis and a chain of
    its supporters, ending at a claim P), a supportive response (a Pro reply of P, system ``"supportive"``) against
    a contradicting one (a Con reply of P, system ``"contradicting"``): P's k-th Pro reply with its k-th Con reply
    (Kialo's order), so each reply is in at most one pair. The topic is P's text. A thesis is a node without a
    Pro/Con label (the root; in a multi-thesis discussion the root's question is none, its unlabelled positions
    are), as :func:`ml.generation.corpora.thesis_nodes` reads them."""
    by_path = {n.path: n for n in tree.nodes}
    children: dict[str, list] = {}
    for node in tree.nodes:
        if node.parent_path is not None:
            children.setdefault(node.parent_path, []).append(node)

    def thesis(node) -> bool:
        if node.stance in (Stance.PRO, Stance.CON):
            return False
        # the question of a multi-thesis discussion (unlabelled children) is not an argument
        return not (
            node.parent_path is None
            and any(k.stance not in (Stance.PRO, Stance.CON) for k in children.get(node.path, []))
        )

    prompts: dict[str, tuple[str, ...] | None] = {}

    def prompt_of(node) -> tuple[str, ...] | None:
        """The paths of the prompt thesis .. node when it matches ``[Pro Con][Pro]*``, else None."""
        if node.path not in prompts:
            if thesis(node):
                prompts[node.path] = (node.path,)
            elif node.stance == Stance.PRO and node.parent_path in by_path:
                above = prompt_of(by_path[node.parent_path])
                prompts[node.path] = above + (node.path,) if above else None
            else:
                prompts[node.path] = None
        return prompts[node.path]

    out: list[dict] = []
    for node in sorted(tree.nodes, key=lambda n: tuple(int(p) for p in n.path.split("."))):
        prompt = prompt_of(node)
        if not prompt:
            continue
        kids = children.get(node.path, [])
        pros = [k for k in kids if k.stance == Stance.PRO]
        cons = [k for k in kids if k.stance == Stance.CON]
        for pro, con in zip(pros, cons):
            if pro.text.strip() == con.text.strip():
                continue
            key = f"pair:kialo:{tree.content_hash[:16]}:{pro.path}|{con.path}"
            out.append(
                {
                    "topic": node.text[:MAX_TEXT],
                    "stance": PAIR_STANCE,
                    "a": {"system": SUPPORTIVE, "text": pro.text[:MAX_TEXT]},
                    "b": {"system": CONTRADICTING, "text": con.text[:MAX_TEXT]},
                    "key": key,
                    "source": {
                        "tree": tree.content_hash,
                        "title": tree.title,
                        "prompt": list(prompt),
                        "a": pro.path,
                        "b": con.path,
                    },
                }
            )
            if limit is not None and len(out) >= limit:
                return out
    return out


# --- projects and import --------------------------------------------------------------------------
DEFAULTS = {
    PAIRWISE: {"assignments_per_item": 2, "items_per_hit": 5},
    LIKERT: {"assignments_per_item": 5, "items_per_hit": 1},
}


def get_project(slug: str, task_type: str, *, create: bool = False, **settings):
    """The project ``slug`` (of ``task_type``), created as a draft when missing and ``create``."""

    def make():
        values = {
            **{k: v for k, v in DEFAULTS[task_type].items() if settings.get(k) is None},
            **{k: v for k, v in settings.items() if v is not None},
        }
        return services.create_project(name=values.pop("name", None) or slug, slug=slug, task_type=task_type, **values)

    return project_of_type(slug, task_type, error=RatingsError, create=make if create else None)


def import_payloads(project, payloads: list[dict]) -> dict:
    """Items for ``payloads`` (skipping keys the project has), then HITs; one transaction.
    Returns ``{"created", "skipped", "hits"}``."""
    payloads = [{k: v for k, v in p.items() if k != "_line"} for p in payloads]
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        have = set(
            Item.objects.filter(project=locked, external_key__in=[p["key"] for p in payloads]).values_list(
                "external_key", flat=True
            )
        )
        new = [p for p in payloads if p["key"] not in have]
        if new:
            services.add_items(locked, new)
        hits = services.build_hits(locked)
    return {"created": len(new), "skipped": len(payloads) - len(new), "hits": hits}


def write_payloads(project, payloads: list[dict], progress, what: str) -> dict:
    """A studio source's ``write`` for a rating task type: :func:`import_payloads` with a progress report before and
    after (``what``: "importing debates", ...). Returns ``{"items", "gold"}``."""
    progress(0, len(payloads), what)
    s = import_payloads(project, payloads)
    progress(len(payloads), len(payloads), what)
    return {"items": s["created"], "gold": 0}


def import_pairs(project, path) -> dict:
    return import_payloads(project, read_pairs(path))


def import_corpus_pairs(project, path, **options) -> dict:
    return import_payloads(project, read_corpus_pairs(path, **options))


def import_debates(project, path) -> dict:
    return import_payloads(project, read_debates(path))


def import_trees(project, *, length: int = 10, limit: int | None = None, trees=None) -> dict:
    payloads = tree_debates(trees, length=length, limit=limit)
    if not payloads:
        raise RatingsError(f"no root-to-leaf path of {length} turns in the imported debate trees")
    return import_payloads(project, payloads)


__all__ = [
    "DEFAULTS",
    "ImportFailed",
    "get_project",
    "import_corpus_pairs",
    "import_debates",
    "import_pairs",
    "import_payloads",
    "import_trees",
    "read_corpus_pairs",
    "read_debates",
    "read_pairs",
    "record_debates",
    "tree_debates",
    "tree_pairs",
]
