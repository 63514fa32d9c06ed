from django.contrib import admin

from .models import OIDCIdentity


@admin.register(OIDCIdentity)
class OIDCIdentityAdmin(admin.ModelAdmin):
    """Who signs in with the institution's provider as whom. Links are made only by a sign-in
    (:func:`argora.oidc.user_for_claims`); deleting one unlinks the account (the next sign-in is matched afresh)."""

    list_display = ("subject", "issuer", "user", "created_at")
    search_fields = ("subject", "user__username", "user__email")
    list_select_related = ("user",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
