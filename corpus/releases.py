"""Versioned, immutable dataset releases.

A release is a folder ``<ARTIFACT_ROOT>/releases/<name>/<version>/`` of JSONL files plus a ``README.md``
dataset card, and a :class:`corpus.models.Release` row with one :class:`corpus.models.ReleaseFile` per file
(rows, size, sha256). What goes into the files is decided by an *exporter*, looked up by ``kind``:

- :func:`register_exporter` registers one. An exporter is a callable ``(config) -> Iterable[(file name,
  Iterable[dict])]``; optional hooks normalise/validate the config (``prepare``), count the rows for the
  progress bar (``count``) and add sections to the dataset card (``card``). Other apps plug in their own
  kinds (aspect datasets, BWS pairs, ValNov...) from a module named ``exporters`` (imported on demand by
  :func:`get_exporter`) or any module imported at start-up; nothing here changes.
- :func:`build_release` validates, streams the rows to disk (bounded memory, hashed while written) in a
  temporary folder, writes the card, renames the folder into place atomically and only then marks the
  release published. A failure removes the temporary folder and leaves no published release.
- :func:`verify_release` re-hashes a release's files.

The ``sentences`` exporter (below) writes :class:`corpus.models.Sentence` rows, optionally with the fixed
splits of Arg-CTRL App. F (cross-topic and in-topic).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from argora.jsonl import dumps
from argora.progress import Progress, null_progress

from .models import Release, ReleaseFile, Sentence, Stance, Topic
from .signals import release_published

CARD_NAME = "README.md"
CHUNK_SIZE = 2000
_PROGRESS_EVERY = 500
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
# the dataset card's own fields (build_release(card=...)), each at most this many characters
CARD_FIELDS = ("license", "citation", "description")
CARD_LIMITS = {"license": 200, "citation": 5000, "description": 10000}

Rows = Iterable[dict]
ExportFn = Callable[[dict], Iterable[tuple[str, Rows]]]


class ReleaseExists(ValueError):
    """A release with this name and version exists already; releases are never overwritten."""


@dataclass
class CardContext:
    """What a card hook gets: the release being built, its (normalised) config and the files written."""

    release: Release
    config: dict
    files: list[dict]  # [{"name", "rows", "size", "sha256"}] in write order
    counts: Counter  # rows per tuple of the exporter's ``count_by`` keys


@dataclass
class Exporter:
    kind: str
    export: ExportFn
    prepare: Callable[[dict], dict] | None = None
    count: Callable[[dict], int | None] | None = None
    card: Callable[[CardContext], Iterable[tuple[str, str]]] | None = None
    count_by: tuple[str, ...] = field(default_factory=tuple)
    description: str = ""


_EXPORTERS: dict[str, Exporter] = {}


def register_exporter(
    kind: str, *, prepare=None, count=None, card=None, count_by: Iterable[str] = (), description: str = ""
):
    """Decorator: register ``fn(config) -> Iterable[(file name, rows)]`` as the exporter for ``kind``.

    - ``prepare(config) -> config``: validate and fill defaults; raise ``ValueError`` naming the config key.
      The returned config is what the release stores (so it says exactly how it was made).
    - ``count(config) -> int | None``: total rows, for progress reporting.
    - ``card(ctx: CardContext) -> [(section title, markdown)]``: extra dataset-card sections. A kind
      without an "Agreement" section gets one saying that no agreement figures are recorded.
    - ``count_by``: row keys to tabulate in the card ("Counts" section), e.g. ``("topic", "stance", "split")``.
    """

    def decorator(fn: ExportFn) -> ExportFn:
        _EXPORTERS[kind] = Exporter(
            kind=kind,
            export=fn,
            prepare=prepare,
            count=count,
            card=card,
            count_by=tuple(count_by),
            description=description or (fn.__doc__ or "").strip(),
        )
        return fn

    return decorator


def get_exporter(kind: str) -> Exporter:
    if kind not in _EXPORTERS:
        # Apps contribute exporters from an ``exporters`` module; import them once, on demand.

        autodiscover_modules("exporters")
    try:
        return _EXPORTERS[kind]
    except KeyError:
        raise ValueError(f"kind: unknown release kind {kind!r} (known: {', '.join(sorted(_EXPORTERS))})") from None


# --- paths -----------------------------------------------------------------------------------------


def releases_root() -> Path:
    return Path(settings.ARTIFACT_ROOT) / "releases"


def release_path(release: Release) -> Path:
    """The folder of a release (``Release.directory`` is relative to ARTIFACT_ROOT)."""
    return Path(settings.ARTIFACT_ROOT) / release.directory


def release_file_path(release: Release, name: str) -> Path | None:
    """Path of a file listed in the release, or None when the name is not one of its files."""
    if not release.files.filter(name=name).exists():
        return None
    folder = release_path(release).resolve()
    path = (folder / name).resolve()
    if path.parent != folder:  # names are plain file names; never serve anything outside the folder
        return None
    return path


def _check_name(field_name: str, value: str) -> str:
    value = (value or "").strip()
    if not _SAFE_NAME.match(value) or ".." in value:
        raise ValueError(
            f"{field_name}: {value!r} is not a valid release {field_name}; use letters, digits, "
            f"'.', '_' and '-' (it becomes a folder name), starting with a letter or digit"
        )
    return value


# --- build -----------------------------------------------------------------------------------------


def _resolve_creator(creator):
    if creator is None or hasattr(creator, "pk"):
        return creator
    return get_user_model().objects.filter(pk=creator).first()


def _exists(release: Release) -> ReleaseExists:
    state = (
        f"published {release.published_at:%Y-%m-%d %H:%M} UTC"
        if release.published_at
        else release.get_status_display().lower()
    )
    hint = (
        " (if no build is running any more, delete the stale release in the admin and retry)"
        if release.status == Release.Status.BUILDING
        else ""
    )
    return ReleaseExists(
        f"release {release.name} {release.version} already exists ({state}); "
        f"releases are immutable: choose a new version{hint}"
    )


def check_release_free(name: str, version: str) -> None:
    """Raise :class:`ReleaseExists` when name+version is taken (a failed attempt may be rebuilt)."""
    existing = Release.objects.filter(name=name, version=version).exclude(status=Release.Status.FAILED).first()
    if existing is not None:
        raise _exists(existing)


def check_new_release(name: str, version: str) -> tuple[str, str]:
    """``(name, version)`` stripped, when they are valid folder names and not taken yet; else ``ValueError`` naming
    ``name`` or ``version`` (a taken one: :class:`ReleaseExists`). What a form checks before it queues a build."""
    name, version = _check_name("name", name), _check_name("version", version)
    check_release_free(name, version)
    return name, version


def _claim(name: str, version: str, kind: str, config: dict, creator, card: dict | None = None) -> Release:
    """Create the ``building`` row; the unique constraint is the final guard against a concurrent twin."""
    try:
        with transaction.atomic():
            existing = Release.objects.select_for_update().filter(name=name, version=version).first()
            if existing is not None:
                if existing.status != Release.Status.FAILED:
                    raise _exists(existing)
                existing.delete()  # a failed attempt leaves nothing worth keeping; this is a retry
            return Release.objects.create(
                name=name,
                version=version,
                kind=kind,
                config=config,
                creator=creator,
                card=card or {},
                status=Release.Status.BUILDING,
                directory=f"releases/{name}/{version}",
            )
    except IntegrityError:
        raise ReleaseExists(
            f"release {name} {version} already exists (created concurrently); "
            f"releases are immutable: choose a new version"
        ) from None


def _write_rows(path: Path, rows: Rows, on_row: Callable[[dict], None]) -> dict:
    """Stream rows to ``path`` as JSONL, hashing while writing. Never holds more than one row."""
    digest = hashlib.sha256()
    count = size = 0
    with open(path, "xb") as fh:
        for row in rows:
            line = (dumps(row) + "\n").encode("utf-8")
            fh.write(line)
            digest.update(line)
            size += len(line)
            count += 1
            on_row(row)
        fh.flush()
        os.fsync(fh.fileno())
    return {"name": path.name, "rows": count, "size": size, "sha256": digest.hexdigest()}


def _hash_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


class ReleaseFileChanged(ValueError):
    """A published release file whose bytes no longer match the checksum recorded when it was published."""


def open_verified(release: Release, name: str):
    """The open file ``name`` of a published release, checked against its recorded SHA-256 and size first (the
    file is hashed through the same open handle that is returned, so a file replaced meanwhile is not served
    either). ``None`` when the release has no such file; :class:`ReleaseFileChanged` when the bytes differ."""
    path = release_file_path(release, name)
    recorded = release.files.filter(name=name).first()
    if path is None or recorded is None or not path.is_file():
        return None
    fh = open(path, "rb")
    digest, size = hashlib.sha256(), 0
    for block in iter(lambda: fh.read(1 << 20), b""):
        digest.update(block)
        size += len(block)
    if digest.hexdigest() != recorded.sha256 or size != recorded.size:
        fh.close()
        raise ReleaseFileChanged(
            f"{name}: the file on disk no longer matches the checksum recorded at publication "
            f"(sha256 {recorded.sha256[:12]}..., {recorded.size} bytes)"
        )
    fh.seek(0)
    return fh


def clean_card(card) -> dict:
    """The dataset card's own fields ``{"license", "citation", "description"}`` (each optional; a string of at most
    :data:`CARD_LIMITS` characters, stripped; empty ones left out). ``ValueError`` naming ``card.<field>``."""
    if card is None:
        return {}
    if not isinstance(card, dict):
        raise ValueError(f"card: expected an object with {', '.join(CARD_FIELDS)}, got {type(card).__name__}")
    unknown = sorted(set(card) - set(CARD_FIELDS))
    if unknown:
        raise ValueError(f"card: unknown field(s) {', '.join(map(str, unknown))} (expected {', '.join(CARD_FIELDS)})")
    out = {}
    for key in CARD_FIELDS:
        value = card.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"card.{key}: expected text, got {type(value).__name__}")
        value = value.replace("\r\n", "\n").strip()
        if len(value) > CARD_LIMITS[key]:
            raise ValueError(f"card.{key}: at most {CARD_LIMITS[key]} characters (got {len(value)})")
        if key == "license" and "\n" in value:
            raise ValueError("card.license: one line (an SPDX id such as CC-BY-4.0, or the licence's name)")
        if value:
            out[key] = value
    return out


def build_release(
    name: str,
    version: str,
    *,
    kind: str = "sentences",
    config: dict | None = None,
    creator=None,
    card: dict | None = None,
    progress: Progress = null_progress,
) -> Release:
    """Build and publish release ``name`` ``version`` with the exporter for ``kind``.

    Refuses (:class:`ReleaseExists`) when that name+version exists; raises ``ValueError`` naming the
    config key for a bad config (before anything is written). ``creator`` is a user or a user id.
    ``card``: the dataset card's ``license`` / ``citation`` / ``description`` (:func:`clean_card`), stored on the
    release and written near the top of its README.md.
    On any failure the temporary folder is removed and the release row is marked failed with the error.
    """
    name = _check_name("name", name)
    version = _check_name("version", version)
    card = clean_card(card)
    exporter = get_exporter(kind)
    check_release_free(name, version)
    config = dict(config or {})
    if exporter.prepare is not None:
        config = exporter.prepare(config)
    creator = _resolve_creator(creator)

    release = _claim(name, version, kind, config, creator, card)
    final = releases_root() / name / version
    tmp = releases_root() / f".tmp-{uuid.uuid4().hex}"
    moved = False
    try:
        if final.exists():
            raise ReleaseExists(
                f"{final} exists on disk although no release row claims it; move it away or choose a new version"
            )
        tmp.mkdir(parents=True)
        total = exporter.count(config) if exporter.count is not None else None
        files: list[dict] = []
        counts: Counter = Counter()
        done = [0]
        progress(0, total, "exporting")

        for file_name, rows in exporter.export(config):
            if not _SAFE_NAME.match(file_name) or file_name == CARD_NAME or any(f["name"] == file_name for f in files):
                raise ValueError(f"exporter {kind!r} yielded an invalid or duplicate file name {file_name!r}")

            def on_row(row: dict, file_name=file_name) -> None:
                if exporter.count_by:
                    counts[tuple(row.get(key) for key in exporter.count_by)] += 1
                done[0] += 1
                if done[0] % _PROGRESS_EVERY == 0:
                    progress(done[0], total, f"writing {file_name}")

            files.append(_write_rows(tmp / file_name, rows, on_row))
            progress(done[0], total, f"wrote {file_name}")

        card_text = render_card(release, exporter, config, files, counts)
        card_path = tmp / CARD_NAME
        card_path.write_bytes(card_text.encode("utf-8"))
        sha, size = _hash_file(card_path)
        files.append({"name": CARD_NAME, "rows": 0, "size": size, "sha256": sha})
        for entry in tmp.iterdir():
            entry.chmod(0o444)

        final.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp, final)  # atomic on one file system: the folder appears complete or not at all
        moved = True

        with transaction.atomic():
            locked = Release.objects.select_for_update().get(pk=release.pk)
            if locked.status != Release.Status.BUILDING:
                raise RuntimeError(f"release {name} {version} changed state to {locked.status} while building")
            ReleaseFile.objects.bulk_create(ReleaseFile(release=locked, **f) for f in files)
            locked.status = Release.Status.PUBLISHED
            locked.published_at = timezone.now()
            locked.error = ""
            locked.save()
            release_published.send(sender=Release, release=locked)  # e.g. the projects' audit logs
        progress(done[0], done[0], "published")
        return locked
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if moved:
            shutil.rmtree(final, ignore_errors=True)
        _mark_failed(release, exc)
        raise


def _mark_failed(release: Release, exc: BaseException) -> None:
    try:
        with transaction.atomic():
            Release.objects.filter(pk=release.pk).exclude(status=Release.Status.PUBLISHED).update(
                status=Release.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:10000]
            )
    except Exception:  # noqa: BLE001 - the connection may be unusable (the original error is what matters)
        pass


def verify_release(release: Release) -> list[str]:
    """Re-hash a release's files against the recorded checksums; returns the problems (empty = intact)."""
    problems: list[str] = []
    if release.status != Release.Status.PUBLISHED:
        problems.append(f"release {release} is not published (status {release.status})")
    folder = release_path(release)
    if not folder.is_dir():
        return problems + [f"{folder}: folder is missing"]
    listed = set()
    for f in release.files.all():
        listed.add(f.name)
        path = folder / f.name
        if not path.is_file():
            problems.append(f"{f.name}: file is missing")
            continue
        sha, size = _hash_file(path)
        if size != f.size:
            problems.append(f"{f.name}: size {size} bytes, recorded {f.size}")
        if sha != f.sha256:
            problems.append(f"{f.name}: sha256 {sha}, recorded {f.sha256}")
    for path in sorted(folder.iterdir()):
        if path.name not in listed:
            problems.append(f"{path.name}: not part of the release")
    if not listed:
        problems.append("no files recorded")
    return problems


def release_summary(release: Release) -> dict:
    return {
        "release_id": release.pk,
        "name": release.name,
        "version": release.version,
        "directory": str(release_path(release)),
        "files": {f.name: f.sha256 for f in release.files.all()},
    }


# --- dataset card ----------------------------------------------------------------------------------


def _md(value) -> str:
    text = "—" if value is None or value == "" else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def render_card(release: Release, exporter: Exporter, config: dict, files: list[dict], counts: Counter) -> str:
    creator = release.creator.get_username() if release.creator else "—"
    lines = [
        f"# {release.name} {release.version}",
        "",
        f"- kind: {exporter.kind}",
        f"- creator: {creator}",
        f"- created: {release.created_at.isoformat()}",
        "- built with: Argora (`manage.py export_release` / admin publish action / studio Release step)",
        "",
    ]
    card = release.card if isinstance(release.card, dict) else {}
    if card.get("description"):
        lines += [card["description"], ""]
    if exporter.description:
        lines += [exporter.description, ""]
    if card.get("license"):
        lines += ["## License", "", card["license"], ""]
    if card.get("citation"):
        fence = "```"
        while fence in card["citation"]:  # a fence the citation itself cannot close
            fence += "`"
        lines += ["## Citation", "", fence, card["citation"], fence, ""]
    lines += [
        "## Configuration",
        "",
        "```json",
        json.dumps(config, sort_keys=True, indent=2, ensure_ascii=False),
        "```",
        "",
        "## Files",
        "",
        "| file | rows | bytes | sha256 |",
        "| --- | ---: | ---: | --- |",
    ]
    lines += [f"| {f['name']} | {f['rows']} | {f['size']} | `{f['sha256']}` |" for f in files]
    lines += ["", f"{CARD_NAME} itself is listed with its checksum in the release record.", ""]
    if exporter.count_by:
        header = " | ".join(exporter.count_by)
        lines += [
            f"## Counts ({' × '.join(exporter.count_by)})",
            "",
            f"| {header} | rows |",
            "| " + " | ".join("---" for _ in exporter.count_by) + " | ---: |",
        ]
        for key in sorted(counts, key=lambda k: tuple("" if v is None else str(v) for v in k)):
            lines.append("| " + " | ".join(_md(v) for v in key) + f" | {counts[key]} |")
        lines += ["| **total** |" + " |" * (len(exporter.count_by) - 1) + f" {sum(counts.values())} |", ""]
    sections = list(exporter.card(CardContext(release, config, files, counts))) if exporter.card else []
    if not any(title.strip().lower() == "agreement" for title, _ in sections):
        sections.append(("Agreement", "No agreement figures recorded for this release."))
    for title, body in sections:
        lines += [f"## {title}", "", body.rstrip(), ""]
    return "\n".join(lines)


# --- the "sentences" exporter ----------------------------------------------------------------------

# Arg-CTRL App. F: fixed cross-topic split of the UKP topics.
DEFAULT_CROSS_TOPIC = {"test": ["gun control", "school uniforms"], "dev": ["death penalty"]}
# Arg-CTRL App. F: the in-topic split sizes of the aspect dataset (a documented example, not a default).
APP_F_IN_TOPIC_SIZES = {"train": 3532, "dev": 500, "test": 1000}
SPLITS = ("train", "dev", "test")
STANCES = [s.value for s in Stance]


def _str_list(key: str, value) -> list[str]:
    if isinstance(value, str):
        value = list(value.split(","))
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key}: expected a list of strings, got {value!r}")
    return [v.strip() for v in value if v.strip()]


def _sentences_queryset(topics: list[str], stances: list[str]):
    return Sentence.objects.filter(topic__name__in=topics, stance__in=stances).order_by("id")


def clean_split(
    split, *, default_mode: str, cross_topic: Callable[[dict], dict], in_topic: Callable[[dict], dict]
) -> dict:
    """A release config's ``split`` (a mode name, or ``{"mode": ..., ...}``; empty: ``default_mode``) made explicit:
    ``{"mode": "none"}``, or the mode with the keys ``cross_topic(split)`` / ``in_topic(split)`` check and return.
    Every release kind with splits reads its config with this; errors are ``ValueError`` naming ``config.split``."""
    split = split or {"mode": default_mode}
    if isinstance(split, str):
        split = {"mode": split}
    if not isinstance(split, dict):
        raise ValueError(f"config.split: expected an object with a 'mode', got {split!r}")
    mode = split.get("mode", default_mode)
    if mode == "none":
        return {"mode": "none"}
    if mode == "cross-topic":
        return {"mode": mode, **cross_topic(split)}
    if mode == "in-topic":
        return {"mode": mode, **in_topic(split)}
    raise ValueError(f"config.split.mode: {mode!r} is not one of none, cross-topic, in-topic")


def check_export_args(out, split: str | None, out_dir, *, file_name: str) -> str | None:
    """Why a command's ``--out FILE`` / ``--split MODE`` / ``--out-dir DIR`` do not make a valid export (``None``
    when they do): ``out`` is a file (not a folder, e.g. ``file_name`` inside it); ``split`` (cross-topic / in-topic;
    ``none`` = no split) goes with ``out_dir`` and ``out_dir`` with ``split``; at least one of ``out`` and ``split``
    is given. The commands exit 2 with this text."""
    if split in ("none", ""):
        split = None
    if split is not None and split not in ("cross-topic", "in-topic"):
        return f"--split: {split!r} is not one of cross-topic, in-topic"
    if split is not None and out_dir is None:
        return "--split needs --out-dir DIR (the folder for train.jsonl, dev.jsonl, test.jsonl)"
    if out_dir is not None and split is None:
        return "--out-dir needs --split cross-topic|in-topic (use --out FILE.jsonl for the unsplit file)"
    if out is None and split is None:
        return "give --out FILE.jsonl (the unsplit file) and/or --split cross-topic|in-topic --out-dir DIR"
    if out is not None and Path(out).is_dir():
        return f"--out: {out} is a folder; give a file such as {Path(out) / file_name} (split files go to --out-dir)"
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        return f"--out-dir: {out_dir} is a file, not a folder"
    return None


def split_seed(split: dict, default: int) -> int:
    """The in-topic split's ``seed`` (an integer)."""
    seed = split.get("seed", default)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"config.split.seed: expected an integer, got {seed!r}")
    return seed


def prepare_sentences(config: dict) -> dict:
    """Validate a ``sentences`` config and make it explicit (resolved topic names, stances, split)."""
    known = set(config) - {"topics", "stances", "include_non_arguments", "split"}
    if known:
        raise ValueError(
            f"config: unknown key(s) {', '.join(sorted(known))} "
            f"(expected topics, stances, include_non_arguments, split)"
        )
    by_lower = {t.lower(): t for t in Topic.objects.values_list("name", flat=True)}
    if config.get("topics"):
        names = _str_list("config.topics", config["topics"])
        missing = [n for n in names if n.lower() not in by_lower]
        if missing:
            raise ValueError(f"config.topics: unknown topic(s) {', '.join(repr(m) for m in missing)}")
        topics = sorted({by_lower[n.lower()] for n in names})
    else:
        topics = sorted(by_lower.values())
    if not topics:
        raise ValueError("config.topics: there are no topics to export")

    stances = _str_list("config.stances", config.get("stances") or ["pro", "con"])
    bad = [s for s in stances if s not in STANCES]
    if bad:
        raise ValueError(f"config.stances: unknown stance(s) {bad} (choose from {STANCES})")
    include_none = config.get("include_non_arguments", False)
    if not isinstance(include_none, bool):
        raise ValueError(f"config.include_non_arguments: expected true or false, got {include_none!r}")
    if include_none and "none" not in stances:
        stances.append("none")
    stances = [s for s in STANCES if s in stances]  # canonical order, no duplicates

    split = clean_split(
        config.get("split"),
        default_mode="none",
        cross_topic=lambda s: _prepare_cross_topic(s, topics),
        in_topic=lambda s: _prepare_in_topic(s, topics, stances),
    )
    if split["mode"] == "cross-topic":  # only the topics assigned to a split are exported
        topics = sorted(t for part in SPLITS for t in split[part])
    return {"topics": topics, "stances": stances, "include_non_arguments": "none" in stances, "split": split}


def _prepare_cross_topic(split: dict, topics: list[str]) -> dict:
    by_lower = {t.lower(): t for t in topics}
    chosen: dict[str, list[str]] = {}
    for part in ("test", "dev"):
        given = split.get(part)
        names = _str_list(f"config.split.{part}", given) if given is not None else DEFAULT_CROSS_TOPIC[part]
        missing = [n for n in names if n.lower() not in by_lower]
        if missing:
            hint = (
                ""
                if given is not None
                else (
                    " (the default Arg-CTRL App. F split puts 'gun control' and 'school uniforms' in test and "
                    "'death penalty' in dev; give config.split.train/dev/test explicitly for other topics)"
                )
            )
            raise ValueError(
                f"config.split.{part}: topic(s) {', '.join(repr(m) for m in missing)} "
                f"not among the exported topics{hint}"
            )
        chosen[part] = sorted({by_lower[n.lower()] for n in names})
    if split.get("train") is not None:
        names = _str_list("config.split.train", split["train"])
        missing = [n for n in names if n.lower() not in by_lower]
        if missing:
            raise ValueError(
                f"config.split.train: topic(s) {', '.join(repr(m) for m in missing)} not among the exported topics"
            )
        chosen["train"] = sorted({by_lower[n.lower()] for n in names})
    else:
        taken = set(chosen["test"]) | set(chosen["dev"])
        chosen["train"] = [t for t in topics if t not in taken]
    seen: dict[str, str] = {}
    for part in SPLITS:
        if not chosen[part]:
            raise ValueError(f"config.split.{part}: no topic is assigned to {part}")
        for topic in chosen[part]:
            if topic in seen:
                raise ValueError(
                    f"config.split.{part}: topic {topic!r} is also in {seen[topic]}; "
                    f"cross-topic splits must not share topics"
                )
            seen[topic] = part
    return {part: chosen[part] for part in SPLITS}


def _prepare_in_topic(split: dict, topics: list[str], stances: list[str]) -> dict:
    seed = split_seed(split, 13)
    sizes = split.get("sizes")
    if not isinstance(sizes, dict) or set(sizes) != set(SPLITS):
        raise ValueError(
            f"config.split.sizes: give the number of rows for each of train, dev and test, e.g. "
            f"{json.dumps(APP_F_IN_TOPIC_SIZES)} (Arg-CTRL App. F); got {sizes!r}"
        )
    for part in SPLITS:
        value = sizes[part]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"config.split.sizes.{part}: expected a whole number >= 0, got {value!r}")
    available = _sentences_queryset(topics, stances).count()
    wanted = sum(sizes[part] for part in SPLITS)
    if wanted > available:
        raise ValueError(
            f"config.split.sizes: train+dev+test = {wanted} but only {available} sentences match "
            f"the selected topics and stances"
        )
    return {"seed": seed, "sizes": {part: sizes[part] for part in SPLITS}}


_ROW_FIELDS = ("id", "content_hash", "external_id", "topic__name", "text", "stance", "source", "metadata")


def _rows(queryset, split: str | None, keep_ids: set[int] | None = None) -> Iterator[dict]:
    for values in queryset.values(*_ROW_FIELDS).iterator(chunk_size=CHUNK_SIZE):
        if keep_ids is not None and values["id"] not in keep_ids:
            continue
        yield {
            "hash": values["content_hash"],
            "id": values["external_id"],
            "topic": values["topic__name"],
            "sentence": values["text"],
            "stance": values["stance"],
            "source": values["source"],
            "metadata": values["metadata"],
            "split": split,
        }


def _in_topic_assignment(queryset, seed: int, sizes: dict) -> dict[str, set[int]]:
    """Sample ``sum(sizes)`` positions of the id-ordered rows with ``seed``; memory O(sampled rows)."""
    total = queryset.count()
    positions = random.Random(seed).sample(range(total), sum(sizes[p] for p in SPLITS))
    where: dict[int, str] = {}
    start = 0
    for part in SPLITS:
        for pos in positions[start : start + sizes[part]]:
            where[pos] = part
        start += sizes[part]
    chosen: dict[str, set[int]] = {part: set() for part in SPLITS}
    for pos, pk in enumerate(queryset.values_list("id", flat=True).iterator(chunk_size=CHUNK_SIZE)):
        chosen_part = where.get(pos)
        if chosen_part is not None:
            chosen[chosen_part].add(pk)
    return chosen


def count_sentences(config: dict) -> int:
    split = config["split"]
    if split["mode"] == "in-topic":
        return sum(split["sizes"].values())
    return _sentences_queryset(config["topics"], config["stances"]).count()


def sentences_card(ctx: CardContext) -> list[tuple[str, str]]:
    split = ctx.config["split"]
    if split["mode"] == "cross-topic":
        text = (
            "Cross-topic split (Arg-CTRL App. F style): "
            + "; ".join(f"{part}: {', '.join(split[part])}" for part in SPLITS)
            + "."
        )
    elif split["mode"] == "in-topic":
        text = (
            f"In-topic split: rows sampled at random with seed {split['seed']} from all selected topics: "
            + ", ".join(f"{part} {split['sizes'][part]}" for part in SPLITS)
            + "."
        )
    else:
        text = "No split: one file, sentences.jsonl."
    fmt = (
        "One JSON object per line with keys hash (content hash), id (id in the source corpus), topic, "
        "sentence, stance (pro / con / none), source, metadata, split. Rows are ordered by database id; "
        'keys are sorted. Importable with `corpus.importers.import_file(path, "jsonl")`.'
    )
    return [
        ("Format", fmt),
        ("Splits", text),
        ("Agreement", "No agreement figures recorded: stance labels are taken from the source corpus."),
    ]


@register_exporter(
    "sentences",
    prepare=prepare_sentences,
    count=count_sentences,
    card=sentences_card,
    count_by=("topic", "stance", "split"),
    description="Sentence-level arguments with topic and stance (corpus.Sentence).",
)
def export_sentences(config: dict) -> Iterator[tuple[str, Rows]]:
    split = config["split"]
    if split["mode"] == "none":
        yield "sentences.jsonl", _rows(_sentences_queryset(config["topics"], config["stances"]), None)
    elif split["mode"] == "cross-topic":
        for part in SPLITS:
            yield f"{part}.jsonl", _rows(_sentences_queryset(split[part], config["stances"]), part)
    else:
        queryset = _sentences_queryset(config["topics"], config["stances"])
        chosen = _in_topic_assignment(queryset, split["seed"], split["sizes"])
        for part in SPLITS:
            yield f"{part}.jsonl", _rows(queryset, part, chosen[part])
