"""Platform-wide models: who a user is at the institution's OpenID Connect provider (:mod:`argora.oidc`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OIDCIdentity(models.Model):
    """A user's identity at an OpenID Connect provider: the provider's ``iss`` and its ``sub`` for that person, the
    pair the OIDC spec makes stable and unique. A sign-in with this pair is this user; nothing else (an e-mail
    address, a username) decides who a later sign-in is. Made by :func:`argora.oidc.user_for_claims` only."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255, help_text="the provider's sub claim")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "OpenID Connect identity"
        verbose_name_plural = "OpenID Connect identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="unique_oidc_subject"),
            models.UniqueConstraint(fields=["issuer", "user"], name="unique_oidc_user_per_issuer"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
