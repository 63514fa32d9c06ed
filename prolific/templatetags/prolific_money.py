"""``{{ cents|money }}``: an amount in cents in the Prolific account's currency (ARGORA_PROLIFIC_CURRENCY)."""

from django import template

from prolific.publishing import money as format_money

register = template.Library()


@register.filter
def money(cents):
    return format_money(cents)
