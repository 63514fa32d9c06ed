"""``{% oidc_sign_in as oidc %}``: ``{"name", "url"}`` of sign-in with the institution's OpenID Connect provider, or
``None`` while it is not configured (the login page shows its button only then)."""

from django import template
from django.conf import settings
from django.urls import reverse

from argora import oidc

register = template.Library()


@register.simple_tag
def oidc_sign_in():
    if not oidc.enabled():
        return None
    return {"name": settings.ARGORA_OIDC_NAME, "url": reverse("oidc_authentication_init")}
