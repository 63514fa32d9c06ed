"""Institutional sign-in for staff: OpenID Connect (authorization code flow with nonce, state and PKCE), built on
mozilla-django-oidc. Off unless ``ARGORA_OIDC_ISSUER``, ``ARGORA_OIDC_CLIENT_ID`` and ``ARGORA_OIDC_CLIENT_SECRET``
are set (README "Institutional sign-in (OpenID Connect)").

- Endpoints come from ``<issuer>/.well-known/openid-configuration``, read at the first sign-in (never at start-up: a
  provider that is down breaks no page but its own sign-in) and kept :data:`DISCOVERY_SECONDS`; an endpoint set in
  the environment wins over the document.
- An id_token counts only with a valid signature (RS256 with the provider's JWKS by default), ``iss`` = the
  configured issuer, ``aud`` = our client id (and ``azp`` = it when there are several audiences), ``exp`` and ``iat``
  present and ``exp`` not past (:data:`LEEWAY_SECONDS`), and the nonce of this browser's sign-in; the userinfo answer
  must be about the same ``sub``.
- Who the person is: :func:`user_for_claims`. A new user is a plain account -- no staff flag, no superuser, no
  group, no permission, no usable password: it sees no staff page until a project's owner makes it a member.
  Passwordless accounts (invite and platform workers) are never matched, and the worker mechanisms of
  :mod:`annotation.identity` never log in an account that signs in here (:func:`signs_in_with_provider`).
"""

from __future__ import annotations

import hashlib
import logging
import re

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404
from django.shortcuts import redirect
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from .models import OIDCIdentity

LOGGER = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
DISCOVERY_SECONDS = 3600  # how long a discovery document is used before it is read again
DISCOVERY_KEY = "argora:oidc:discovery:{}"
LEEWAY_SECONDS = 60  # clock skew allowed on exp / iat
# mozilla-django-oidc's setting -> the discovery document's key (OpenID Connect Discovery 1.0, section 3)
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
ID_TOKEN_CLAIMS = ["iss", "aud", "sub", "exp", "iat"]
SUB_MAX_LENGTH = 255  # OpenID Connect Core 1.0, section 2 (and OIDCIdentity.subject)
_NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read (or is not the configured issuer's)."""


class SignInRefused(SuspiciousOperation):
    """The provider vouched for someone, but no account may be signed in for them (the reason says why)."""


# --- configuration -------------------------------------------------------------------------------------------------
def enabled() -> bool:
    """Whether sign-in with the provider is configured (issuer, client id and client secret)."""
    return bool(settings.ARGORA_OIDC_ISSUER and settings.OIDC_RP_CLIENT_ID and settings.OIDC_RP_CLIENT_SECRET)


def discovery() -> dict:
    """The issuer's discovery document (cached); :class:`ProviderUnavailable` when it cannot be read or names
    another issuer (OpenID Connect Discovery 1.0, section 4.3: it must be identical to the configured one)."""
    issuer = settings.ARGORA_OIDC_ISSUER
    key = DISCOVERY_KEY.format(hashlib.sha256(issuer.encode()).hexdigest())
    document = cache.get(key)
    if document is None:
        url = issuer.rstrip("/") + DISCOVERY_PATH
        try:
            response = requests.get(url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL)
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise ProviderUnavailable(f"{url}: {exc}") from exc
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            raise ProviderUnavailable(f"{url} is not the discovery document of {issuer}")
        cache.set(key, document, DISCOVERY_SECONDS)
    return document


def endpoint(setting: str) -> str:
    """The provider endpoint ``setting`` (one of :data:`ENDPOINTS`): from the environment, else discovered."""
    explicit = getattr(settings, setting, "")
    if explicit:
        return explicit
    return str(discovery().get(ENDPOINTS[setting]) or "")


# --- who signs in: the service and the selector --------------------------------------------------------------------
def signs_in_with_provider(user) -> bool:
    """Whether ``user`` has an identity at an OpenID Connect provider (then no worker cookie or recovery code ever
    logs it in: annotation.identity)."""
    return bool(user is not None and user.pk is not None and OIDCIdentity.objects.filter(user_id=user.pk).exists())


def _verified_email(claims: dict) -> str:
    verified = claims.get("email_verified")
    if verified is True or str(verified).lower() == "true":
        return str(claims.get("email") or "").strip()
    return ""


def _user_by_verified_email(issuer: str, email: str):
    """The one account with ``email`` that logs in with a password and has no identity at ``issuer`` yet; ``None``
    when there is none; :class:`SignInRefused` when there are several. Passwordless accounts (invite and platform
    workers, accounts made by a sign-in here) are never matched."""
    if not email:
        return None
    candidates = [
        user
        for user in get_user_model().objects.filter(email__iexact=email).exclude(oidc_identities__issuer=issuer)
        if user.has_usable_password()
    ]
    if len(candidates) > 1:
        raise SignInRefused(f"{len(candidates)} accounts have the e-mail address {email}")
    return candidates[0] if candidates else None


def _free_username(claims: dict, subject: str) -> str:
    """A username from the claim ``ARGORA_OIDC_USERNAME_CLAIM`` (else ``sub``): the claim's value when no account has
    it, else that value with a suffix made from ``sub`` -- an existing account is never taken over by its username."""
    user_model = get_user_model()
    wanted = str(claims.get(settings.ARGORA_OIDC_USERNAME_CLAIM) or subject)
    base = _NOT_IN_USERNAME.sub("-", wanted)[:130].strip("-") or "oidc"
    suffix = hashlib.sha256(subject.encode()).hexdigest()
    for username in (base, f"{base}-{suffix[:8]}", f"{base}-{suffix[:16]}"):
        if not user_model.objects.filter(username__iexact=username).exists():
            return username
    raise SignInRefused(f"no free username for {wanted!r}")


def _new_user(claims: dict, subject: str):
    """A plain account: no staff flag, no superuser, no group, no permission, no usable password."""
    return get_user_model().objects.create_user(
        _free_username(claims, subject),
        email=_verified_email(claims),
        password=None,
        first_name=str(claims.get("given_name") or "")[:150],
        last_name=str(claims.get("family_name") or "")[:150],
    )


def user_for_claims(claims: dict):
    """The user a sign-in with the provider's (verified) ``claims`` is, linked to its ``(iss, sub)``:

    1. the user already linked to this ``sub`` at the configured issuer;
    2. else, with ``ARGORA_OIDC_MATCH_EMAIL``, the one account with a password whose e-mail address is the claims'
       ``email`` *and* ``email_verified`` is true (never an unverified address, never a passwordless account);
    3. else, with ``ARGORA_OIDC_CREATE_USERS``, a new plain account (:func:`_new_user`).

    Refused (:class:`SignInRefused`, nothing written): no ``sub`` (or a longer one than the spec allows); an
    inactive account; a superuser unless ``ARGORA_OIDC_ALLOW_SUPERUSERS``; no account and creating accounts is off."""
    issuer, subject = settings.ARGORA_OIDC_ISSUER, str(claims.get("sub") or "")
    if not subject or len(subject) > SUB_MAX_LENGTH:
        raise SignInRefused("the provider sent no sub claim, or one longer than 255 characters")
    with transaction.atomic():
        link = OIDCIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
        if link is not None:
            user = link.user
        else:
            email = _verified_email(claims) if settings.ARGORA_OIDC_MATCH_EMAIL else ""
            user = _user_by_verified_email(issuer, email)
            if user is None and not settings.ARGORA_OIDC_CREATE_USERS:
                raise SignInRefused(f"no account for {subject} at {issuer}, and ARGORA_OIDC_CREATE_USERS is off")
            try:
                with transaction.atomic():
                    user = user or _new_user(claims, subject)
                    OIDCIdentity.objects.create(user=user, issuer=issuer, subject=subject)
            except IntegrityError:  # the same person's sign-in in another tab linked first: that user
                link = OIDCIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
                if link is None:  # another person took the username at the same moment
                    raise SignInRefused(f"no account made for {subject} at {issuer} (a concurrent sign-in)") from None
                user = link.user
        if not user.is_active:
            raise SignInRefused(f"the account {user.get_username()} is inactive")
        if user.is_superuser and not settings.ARGORA_OIDC_ALLOW_SUPERUSERS:
            raise SignInRefused(f"{user.get_username()} is a superuser, and ARGORA_OIDC_ALLOW_SUPERUSERS is off")
    return user


# --- the authentication backend ------------------------------------------------------------------------------------
class OIDCBackend(OIDCAuthenticationBackend):
    """Django's authentication backend for the provider's callback (listed after ModelBackend). It answers only the
    callback view's ``authenticate(request, nonce=..., code_verifier=...)``, never a username and password, and only
    while sign-in is configured (a session made here ends when it is switched off)."""

    def __init__(self, *args, **kwargs):
        # Django makes a backend for every authenticate() and every request's get_user(): no settings checked and no
        # provider asked here (mozilla-django-oidc's __init__ does both), only when a callback is authenticated.
        self.UserModel = get_user_model()

    def _configure(self) -> None:
        """The endpoints and keys of this sign-in (the library reads them in ``__init__``)."""
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        public_key = self.OIDC_RP_SIGN_ALGO[:2] in ("RS", "ES")  # else HS*: the client secret is the key
        self.OIDC_OP_TOKEN_ENDPOINT = endpoint("OIDC_OP_TOKEN_ENDPOINT")
        self.OIDC_OP_USER_ENDPOINT = endpoint("OIDC_OP_USER_ENDPOINT")
        self.OIDC_OP_JWKS_ENDPOINT = endpoint("OIDC_OP_JWKS_ENDPOINT") if public_key else ""
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        if not self.OIDC_OP_TOKEN_ENDPOINT or (public_key and not self.OIDC_OP_JWKS_ENDPOINT):
            raise ProviderUnavailable("the provider names no token endpoint or no jwks_uri")

    def authenticate(self, request, nonce=None, code_verifier=None, **credentials):
        if credentials or not nonce or request is None or not enabled():
            return None
        self._configure()
        return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)

    def get_user(self, user_id):
        return super().get_user(user_id) if enabled() else None

    def retrieve_matching_jwk(self, token):
        """The provider's key (JWKS) that signed ``token``; :class:`SuspiciousOperation` for a token that is not a
        JWT, names no ``kid`` or a key the provider does not list."""
        try:
            return super().retrieve_matching_jwk(token)
        except (KeyError, TypeError, jwt.InvalidTokenError, jwt.PyJWKError) as exc:
            raise SuspiciousOperation(f"no signing key for the token: {exc!r}") from exc

    def _verify_jws(self, payload, key):
        """The token's claims when its signature, ``iss``, ``aud`` (+ ``azp``), ``exp`` and ``iat`` hold (the library
        checks neither ``iss`` nor ``aud``); :class:`SuspiciousOperation` otherwise."""
        try:
            alg = jwt.get_unverified_header(payload).get("alg")
            if alg != self.OIDC_RP_SIGN_ALGO:
                raise SuspiciousOperation(f"the token is signed with {alg!r}, not {self.OIDC_RP_SIGN_ALGO!r}")
            claims = jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.ARGORA_OIDC_ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": ID_TOKEN_CLAIMS},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"token refused: {exc}") from exc
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("a token for several audiences without azp = our client id")
        return claims

    def get_userinfo(self, access_token, id_token, payload):
        """The id_token's claims with the userinfo endpoint's (when the provider has one) over them; the userinfo
        answer must be about the id_token's ``sub`` (OpenID Connect Core 1.0, section 5.3.2)."""
        if not self.OIDC_OP_USER_ENDPOINT:
            return dict(payload)
        info = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(info, dict) or info.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("the userinfo answer is about another sub than the id_token")
        return {**payload, **info}

    def get_or_create_user(self, access_token, id_token, payload):
        return user_for_claims(self.get_userinfo(access_token, id_token, payload))


# --- views (/oidc/authenticate/, /oidc/callback/) ------------------------------------------------------------------
def _failed(request, reason: str):
    LOGGER.warning("sign-in with the OpenID Connect provider failed: %s", reason)
    messages.error(
        request, f"Signing in with {settings.ARGORA_OIDC_NAME} did not work. Try again, or ask an administrator."
    )
    return redirect(settings.LOGIN_URL)


class AuthenticateView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider (state, nonce and the PKCE verifier kept in this session)."""

    def __init__(self, *args, **kwargs):
        View.__init__(self, *args, **kwargs)  # the endpoint is looked up per request (get), not when the view is made

    def get(self, request):
        if not enabled():
            raise Http404("sign-in with an OpenID Connect provider is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = endpoint("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderUnavailable as exc:
            return _failed(request, str(exc))
        if not self.OIDC_OP_AUTH_ENDPOINT:
            return _failed(request, "the provider names no authorization endpoint")
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider sends the browser back here with ``code`` and ``state``; any failure (a state this session did not
    start, a token that does not verify, a provider that does not answer, a refused account) logs nobody in and goes
    back to the login page with a message."""

    def get(self, request):
        if not enabled():
            raise Http404("sign-in with an OpenID Connect provider is not configured")
        try:
            return super().get(request)
        except (SuspiciousOperation, ProviderUnavailable, requests.RequestException) as exc:
            return _failed(request, str(exc))

    def login_failure(self):
        return _failed(self.request, "no user (a refused account or token, or the provider's error)")
