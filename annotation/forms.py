"""Forms of the HTML pages. The HIT form is dynamic (its fields depend on the task type), so the item
fields are parsed by a convention instead of declared: an input named ``item-<item id>-<field>`` is the
``<field>`` of that item's response; a name ending in ``[]`` collects every value as a list."""

from __future__ import annotations

import re

from django import forms

FEEDBACK_MAX = 10000
ITEM_FIELD = re.compile(r"^item-(\d+)-(.+)$")


class HITSubmitForm(forms.Form):
    assignment = forms.IntegerField(
        min_value=1, error_messages={"required": "the form lost its assignment id; reload the page"}
    )
    feedback = forms.CharField(required=False, max_length=FEEDBACK_MAX, strip=True)
    client_seconds = forms.FloatField(required=False, min_value=0)

    def clean_client_seconds(self):
        # Filled in by the page's script; a page without JavaScript sends it empty.
        return self.cleaned_data.get("client_seconds")


def parse_item_responses(data, item_ids) -> dict[int, dict]:
    """``{item_id: {field: value}}`` from a POST; every item in ``item_ids`` gets an entry (``{}`` when
    nothing was chosen, which the task type then reports as a missing answer for the named field).
    Fields of items outside ``item_ids`` are kept too, so the service can name them as unknown."""
    responses: dict[int, dict] = {int(pk): {} for pk in item_ids}
    for name in data:
        match = ITEM_FIELD.match(name)
        if not match:
            continue
        item_id, field = int(match.group(1)), match.group(2)
        if field.endswith("[]"):
            value = data.getlist(name)
            field = field[:-2]
        else:
            value = data.get(name)
        responses.setdefault(item_id, {})[field] = value
    return responses


def errors_by_item(errors: dict[str, str], item_ids) -> tuple[dict[int, str], list[str]]:
    """Split service errors (``responses.<id>.<field>``: reason) into per-item messages and the rest."""
    known = {int(pk) for pk in item_ids}
    per_item: dict[int, str] = {}
    general: list[str] = []
    for key, reason in errors.items():
        match = re.match(r"^responses\.(\d+)(?:\.(.+))?$", str(key))
        if match and int(match.group(1)) in known:
            item_id, field = int(match.group(1)), match.group(2)
            text = f"{field}: {reason}" if field else str(reason)
            per_item[item_id] = f"{per_item[item_id]} {text}" if item_id in per_item else text
        else:
            general.append(f"{key}: {reason}")
    return per_item, general
