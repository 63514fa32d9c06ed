"""Query-string filters of the corpus API, as serializers: a bad value is an HTTP 400 naming the parameter
(``{"stance": ["\"maybe\" is not a valid choice."]}``), never a silently empty list. The same serializers
describe the query parameters in the OpenAPI schema."""

from __future__ import annotations

from rest_framework import serializers

from .models import FactVariable, Stance
from .serializers import TopicRefField


class _QueryFilter(serializers.Serializer):
    """Blank parameters (``?stance=``) count as absent."""

    def to_internal_value(self, data):
        cleaned = {key: data.get(key) for key in self.fields if data.get(key) not in (None, "")}
        return super().to_internal_value(cleaned)

    @classmethod
    def from_request(cls, request) -> dict:
        query = cls(data=request.query_params)
        query.is_valid(raise_exception=True)
        return dict(query.validated_data)


class SentenceFilter(_QueryFilter):
    topic = TopicRefField(required=False, help_text="Topic id or name.")
    stance = serializers.ChoiceField(choices=Stance.choices, required=False)
    search = serializers.CharField(required=False, help_text="Case-insensitive substring of the text.")


class FactFilter(_QueryFilter):
    topic = TopicRefField(required=False, help_text="Topic id or name.")
    status = serializers.ChoiceField(choices=FactVariable.Status.choices, required=False)
    origin = serializers.ChoiceField(choices=FactVariable.Origin.choices, required=False)


class DebateFilter(_QueryFilter):
    topic = TopicRefField(required=False, help_text="Topic id or name.")
