from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    verbose_name = "Corpus"
    # what the Researcher role may do here (argora.roles)
    researcher_permissions = (
        "add_topic",
        "change_topic",
        "view_topic",
        "view_document",
        "add_sentence",
        "change_sentence",
        "view_sentence",
        "add_factvariable",
        "change_factvariable",
        "view_factvariable",
        "view_debatetree",
        "view_debatenode",
        "add_release",
        "view_release",
        "view_releasefile",
    )
