"""Create an annotation project from corpus sentences.

    manage.py create_project "Stance pilot" --topic "abortion" --limit 200 --labels pro,con,none \
        --assignments-per-item 3 --items-per-hit 5 --gold-from-stance 10 --gold-rate 0.2 --activate
"""
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import services
from corpus import selectors as corpus_selectors
from corpus.models import Sentence


class Command(BaseCommand):
    help = "Create an annotation project (sentence_label by default) from corpus sentences and build its HITs."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--slug", default=None)
        parser.add_argument("--task-type", default="sentence_label")
        parser.add_argument("--labels", default="pro,con,none", help="comma-separated labels")
        parser.add_argument("--topic", action="append", default=[], help="topic name or id (repeatable)")
        parser.add_argument("--limit", type=int, default=None, help="at most this many sentences")
        parser.add_argument("--assignments-per-item", type=int, default=3)
        parser.add_argument("--items-per-hit", type=int, default=5)
        parser.add_argument("--gold-rate", type=float, default=0.0)
        parser.add_argument("--gold-from-stance", type=int, default=0, metavar="N",
                            help="use N sentences with their corpus stance as gold items (expected label = stance)")
        parser.add_argument("--guidelines-file", default=None, help="HTML file with the guidelines")
        parser.add_argument("--activate", action="store_true")

    def handle(self, *args, **o):
        qs = Sentence.objects.select_related("topic").order_by("id")
        if o["topic"]:
            topics = []
            for ref in o["topic"]:
                topic = corpus_selectors.topic_by_ref(ref)
                if topic is None:
                    raise CommandError(f"--topic: no topic {ref!r}", returncode=2)
                topics.append(topic)
            qs = qs.filter(topic__in=topics)
        rows = list(qs[: (o["limit"] or 10 ** 9) + o["gold_from_stance"]])
        if not rows:
            raise CommandError("no corpus sentences match; import some first", returncode=2)
        gold_rows, rows = rows[: o["gold_from_stance"]], rows[o["gold_from_stance"]:]
        guidelines = ""
        if o["guidelines_file"]:
            with open(o["guidelines_file"], encoding="utf-8") as fh:
                guidelines = fh.read()
        labels = [x.strip() for x in o["labels"].split(",") if x.strip()]
        try:
            project = self._create(o, rows, gold_rows, labels, guidelines)
        except services.ProjectInvalid as exc:
            raise CommandError(f"{exc.field}: {exc.reason}", returncode=2) from None
        hits = services.build_hits(project)
        self.stdout.write(f"project {project.slug}: {len(rows)} items, {len(gold_rows)} gold, {hits} HITs, "
                          f"status {project.status}; invite /invite/{project.invite_token}/")

    @transaction.atomic  # a failed set-up leaves nothing behind
    def _create(self, o, rows, gold_rows, labels, guidelines):
        project = services.create_project(
            name=o["name"], slug=o["slug"], task_type=o["task_type"], config={"labels": labels},
            guidelines=guidelines, assignments_per_item=o["assignments_per_item"], items_per_hit=o["items_per_hit"],
            gold_rate=o["gold_rate"], status="active" if o["activate"] else "draft")
        tt = project.get_task_type()
        gold = [{"payload": p, "expected": {"label": s.stance}}
                for s, p in zip(gold_rows, tt.build_items(project, gold_rows))]
        services.add_items_from_rows(project, rows, gold=gold)
        return project
