"""Create an annotation project from corpus sentences, for any task type that builds its items from them.

    manage.py create_project "Stance pilot" --topic "abortion" --limit 200 --labels pro,con,none \
        --assignments-per-item 3 --items-per-hit 5 --gold-from-stance 10 --gold-rate 0.2 --activate
    manage.py create_project "Aspects" --task-type aspect --config '{"top_k": 10}' --topic "nuclear energy"

Task types whose items come from elsewhere (tuples of sampled pairs, imported CSV rows, generated arguments) are
refused with exit status 2 and the command that builds their items (the task type's ``items_howto``).
"""

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import services
from annotation.task_types import all_task_types, get_task_type
from argora.errors import command_error
from corpus import selectors as corpus_selectors
from corpus.models import Sentence


def _default_task_type() -> str:
    return next((t.name for t in all_task_types() if t.is_default), "")


class Command(BaseCommand):
    help = "Create an annotation project from corpus sentences and build its HITs (any task type that can)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--slug", default=None)
        parser.add_argument(
            "--task-type",
            default=None,
            help="a registered task type (default: the registry's default, sentence labels)",
        )
        parser.add_argument("--config", default=None, help="the project's config as a JSON object")
        parser.add_argument(
            "--labels",
            default=None,
            help="comma-separated labels (config.labels; default pro,con,none for the default task type)",
        )
        parser.add_argument("--topic", action="append", default=[], help="topic name or id (repeatable)")
        parser.add_argument("--limit", type=int, default=None, help="at most this many sentences")
        parser.add_argument("--assignments-per-item", type=int, default=None)
        parser.add_argument("--items-per-hit", type=int, default=None)
        parser.add_argument("--gold-rate", type=float, default=None)
        parser.add_argument(
            "--gold-from-stance",
            type=int,
            default=0,
            metavar="N",
            help="use N sentences with their corpus stance as gold items (the task type says what "
            "the stance means as an answer)",
        )
        parser.add_argument("--guidelines-file", default=None, help="HTML file with the guidelines")
        parser.add_argument("--activate", action="store_true")

    def handle(self, *args, **o):
        name = o["task_type"] or _default_task_type()
        try:
            tt = get_task_type(name)
        except KeyError as exc:
            raise CommandError(f"--task-type: {exc.args[0]}", returncode=2) from None
        if not tt.builds_from_sentences:
            raise CommandError(
                f"--task-type: {tt.name!r} does not build its items from corpus sentences; "
                f"{tt.items_howto or 'see its own command'}",
                returncode=2,
            )
        config = self._config(o, tt)
        qs = Sentence.objects.select_related("topic").order_by("id")
        if o["topic"]:
            topics = []
            for ref in o["topic"]:
                topic = corpus_selectors.topic_by_ref(ref)
                if topic is None:
                    raise CommandError(f"--topic: no topic {ref!r}", returncode=2)
                topics.append(topic)
            qs = qs.filter(topic__in=topics)
        rows = list(qs[: (o["limit"] or 10**9) + o["gold_from_stance"]])
        if not rows:
            raise CommandError("no corpus sentences match; import some first", returncode=2)
        gold_rows, rows = rows[: o["gold_from_stance"]], rows[o["gold_from_stance"] :]
        guidelines = ""
        if o["guidelines_file"]:
            with open(o["guidelines_file"], encoding="utf-8") as fh:
                guidelines = fh.read()
        try:
            project = self._create(o, tt, config, rows, gold_rows, guidelines)
        except services.ProjectInvalid as exc:
            raise command_error(exc) from None
        hits = services.build_hits(project)
        self.stdout.write(
            f"project {project.slug}: {len(rows)} items, {len(gold_rows)} gold, {hits} HITs, "
            f"status {project.status}; invite /invite/{project.invite_token}/"
        )

    @staticmethod
    def _config(o, tt) -> dict:
        config = {}
        if o["config"]:
            try:
                config = json.loads(o["config"])
            except ValueError as exc:
                raise CommandError(f"--config: not JSON ({exc})", returncode=2) from None
            if not isinstance(config, dict):
                raise CommandError("--config: expected a JSON object", returncode=2)
        if o["labels"] is not None:
            config["labels"] = [x.strip() for x in o["labels"].split(",") if x.strip()]
        elif tt.is_default and "labels" not in config:
            config["labels"] = ["pro", "con", "none"]
        return config

    @transaction.atomic  # a failed set-up leaves nothing behind
    def _create(self, o, tt, config, rows, gold_rows, guidelines):
        # unset: the task type's project_defaults, else the model's (3 per item, 5 per HIT, no gold)
        settings = {key: o[key] for key in ("assignments_per_item", "items_per_hit", "gold_rate")}
        project = services.create_project(
            name=o["name"],
            slug=o["slug"],
            task_type=tt.name,
            config=config,
            guidelines=guidelines,
            status="active" if o["activate"] else "draft",
            **settings,
        )
        gold = services.gold_from_sentences(project, gold_rows, field="gold_from_stance")
        services.add_items_from_rows(project, rows, gold=gold)
        return project
