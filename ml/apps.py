from django.apps import AppConfig

from annotation import providers


class MlConfig(AppConfig):
    name = "ml"
    verbose_name = "Machine learning"
    # what the Researcher role may do here (argora.roles)
    researcher_permissions = ("view_modelversion", "change_modelversion", "view_silverrun", "view_silverlabel")

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers)

        # what annotation asks of trained models (dotted paths: imported on first use, nothing heavy at start-up)
        providers.ranker.fill("ml.rankers.active_ranker")
        providers.span_suggester.fill("ml.spans.suggest")
        providers.encode.fill("ml.encoders.encode")
        providers.default_encoder.fill("ml.encoders.default_encoder_path")
        providers.pair_encoder.fill("ml.bi_encoders.active_encoder")
        providers.model_answerer.fill("ml.annotators.answer")
        providers.model_catalogue.fill("ml.annotators.catalogue")
        providers.model_prompt.fill("ml.annotators.prompt_defaults")
        providers.item_confidence.fill("ml.item_confidence.item_confidence")
        providers.retrain_status.fill("ml.loop.retrain_status")
        providers.retrain_settings_update.fill("ml.loop.update_retrain_settings")
