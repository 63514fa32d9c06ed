"""A small BWS project in the database: topics with arguments, sampled pairs, tuples, HITs."""

from annotation.models import Project
from annotation.task_types.bws_similarity import project as bws
from corpus.hashing import sentence_hash
from corpus.models import Sentence, Topic

ARGS = {
    "cloning": [
        "Cloning treats children as objects.",
        "Cloning lets infertile couples have children.",
        "Cloned animals often suffer from health problems.",
        "Cloning could bring back extinct species.",
        "Reproductive cloning is unsafe for the mother.",
        "Cloning reduces genetic diversity.",
    ],
    "school uniforms": [
        "Uniforms reduce bullying over clothes.",
        "Uniforms limit students' self-expression.",
        "Uniforms save parents money.",
        "School uniforms make getting ready faster.",
        "Uniforms do not improve grades.",
        "Uniforms create a sense of community.",
    ],
}


def make_topics():
    out = {}
    for name, texts in ARGS.items():
        topic = Topic.objects.create(name=name)
        out[name] = [
            Sentence.objects.create(
                topic=topic, text=t, content_hash=sentence_hash(name, t), stance="pro" if i % 2 else "con"
            )
            for i, t in enumerate(texts)
        ]
    return out


def make_project(*, pairs=8, build=True, **settings):
    make_topics()
    settings.setdefault("status", Project.Status.ACTIVE)
    project = bws.create_project(name="BWS similarity", slug="bws", config={"scorer": "jaccard", "seed": 0}, **settings)
    for topic in ARGS:
        bws.sample(project, topic, pairs, seed=0)
    if build:
        bws.build(project)
    project.refresh_from_db()
    return project
