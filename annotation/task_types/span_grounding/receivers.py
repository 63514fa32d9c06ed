"""What span grounding does when the fact KB changes (imported by ``AnnotationConfig.ready`` through the registry)."""

from corpus.models import FactVariable
from corpus.signals import fact_changed, fact_uses

from .kb import fact_uses as span_fact_uses
from .review import remap_on_fact_change

fact_changed.connect(remap_on_fact_change, sender=FactVariable, dispatch_uid="span_grounding.remap_on_fact_change")
fact_uses.connect(span_fact_uses, sender=FactVariable, dispatch_uid="span_grounding.fact_uses")
