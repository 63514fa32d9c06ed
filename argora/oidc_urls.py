"""Sign-in with the institution's OpenID Connect provider, under /oidc/ (argora.oidc; 404 while not configured)."""

from django.urls import path

from . import oidc

urlpatterns = [
    path("authenticate/", oidc.AuthenticateView.as_view(), name="oidc_authentication_init"),
    # the redirect URI registered at the provider: https://<this server>/oidc/callback/
    path("callback/", oidc.CallbackView.as_view(), name="oidc_authentication_callback"),
]
