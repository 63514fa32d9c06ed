"""Sign-in with an OpenID Connect provider (argora.oidc) against a fake provider this module runs (pytest-httpserver):
discovery document, JWKS (an RSA key made here), authorization endpoint, token endpoint (checks the client secret,
the code, the redirect URI and PKCE; signs an id_token), userinfo. The browser's trip is followed by hand:
/oidc/authenticate/ -> the provider -> /oidc/callback/?code=...&state=..."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.test import Client
from werkzeug import Response

from annotation import identity, services, teams
from argora.models import OIDCIdentity

pytestmark = pytest.mark.django_db

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # not the provider's
CLIENT_ID, CLIENT_SECRET = "argora-test", "client-secret-123"
CALLBACK = "http://testserver/oidc/callback/"


class FakeProvider:
    """An OpenID Connect provider at ``<httpserver>/realms/uni``. ``claims`` is who signs in next; ``tamper`` changes
    the next id_token's claims (``_key``: sign it with another key; ``_userinfo``: change the userinfo answer)."""

    def __init__(self, httpserver):
        self.issuer = httpserver.url_for("/realms/uni")
        self.claims = {
            "sub": "u-1001",
            "email": "ada@uni.example",
            "email_verified": True,
            "preferred_username": "ada",
            "given_name": "Ada",
            "family_name": "Lovelace",
        }
        self.tamper: dict = {}
        self.codes: dict[str, dict] = {}
        self.tokens: dict[str, dict] = {}
        base = "/realms/uni"
        httpserver.expect_request(f"{base}/.well-known/openid-configuration", method="GET").respond_with_json(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/auth",
                "token_endpoint": f"{self.issuer}/token",
                "userinfo_endpoint": f"{self.issuer}/userinfo",
                "jwks_uri": f"{self.issuer}/jwks",
                "id_token_signing_alg_values_supported": ["RS256"],
            }
        )
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key(), as_dict=True)
        httpserver.expect_request(f"{base}/jwks", method="GET").respond_with_json(
            {"keys": [{**jwk, "kid": "k1", "alg": "RS256", "use": "sig"}]}
        )
        httpserver.expect_request(f"{base}/auth", method="GET").respond_with_handler(self.authorize)
        httpserver.expect_request(f"{base}/token", method="POST").respond_with_handler(self.token)
        httpserver.expect_request(f"{base}/userinfo", method="GET").respond_with_handler(self.userinfo)

    def authorize(self, request):
        q = request.args
        if q.get("client_id") != CLIENT_ID or q.get("response_type") != "code" or q.get("redirect_uri") != CALLBACK:
            return Response("bad authorization request", status=400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = dict(q)
        return Response(
            status=302, headers={"Location": f"{q['redirect_uri']}?" + urlencode({"code": code, "state": q["state"]})}
        )

    def token(self, request):
        form = request.form
        asked = self.codes.pop(form.get("code", ""), None)  # a code is good once
        challenge = base64.urlsafe_b64encode(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
        if (
            asked is None
            or form.get("client_id") != CLIENT_ID
            or form.get("client_secret") != CLIENT_SECRET
            or form.get("grant_type") != "authorization_code"
            or form.get("redirect_uri") != asked["redirect_uri"]
            or challenge.rstrip(b"=").decode() != asked.get("code_challenge")
        ):
            return Response('{"error": "invalid_grant"}', status=400, content_type="application/json")
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": self.claims["sub"],
            "iat": now,
            "exp": now + 300,
            "nonce": asked.get("nonce"),
            **self.tamper,
        }
        key = claims.pop("_key", KEY)
        access = secrets.token_urlsafe(16)
        self.tokens[access] = {**self.claims, **claims.pop("_userinfo", {})}
        id_token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
        return Response(
            json.dumps({"access_token": access, "token_type": "Bearer", "id_token": id_token}),
            content_type="application/json",
        )

    def userinfo(self, request):
        claims = self.tokens.get(request.headers.get("Authorization", "").removeprefix("Bearer "))
        if claims is None:
            return Response(status=401)
        return Response(json.dumps(claims), content_type="application/json")


@pytest.fixture
def provider(httpserver, settings):
    fake = FakeProvider(httpserver)
    settings.ARGORA_OIDC_ISSUER = fake.issuer
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    settings.ARGORA_OIDC_NAME = "Uni Example"
    return fake


def sign_in(client, provider, *, next_url: str = "", state: str | None = None):
    """The browser's round trip; the callback's response."""
    started = client.get("/oidc/authenticate/" + (f"?next={next_url}" if next_url else ""))
    assert started.status_code == 302 and started["Location"].startswith(f"{provider.issuer}/auth?")
    asked = parse_qs(urlsplit(started["Location"]).query)
    assert asked["scope"] == ["openid email profile"] and asked["code_challenge_method"] == ["S256"]
    back = requests.get(started["Location"], allow_redirects=False, timeout=10)
    assert back.status_code == 302, back.text
    url = urlsplit(back.headers["Location"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == CALLBACK
    query = parse_qs(url.query)
    if state is not None:
        query["state"] = [state]
    return client.get(url.path, {k: v[0] for k, v in query.items()})


def signed_in_user(client):
    user_id = client.session.get("_auth_user_id")
    return get_user_model().objects.get(pk=user_id) if user_id else None


def refused(response, client) -> bool:
    return response.status_code == 302 and response["Location"] == "/accounts/login/" and signed_in_user(client) is None


def shut(response) -> bool:
    """Refused: 403, 404 (a project of a team the user is not in), or sent to a login page (the admin's)."""
    return response.status_code in (403, 404) or (response.status_code == 302 and "/login/" in response["Location"])


def test_round_trip_signs_in_a_new_plain_user_and_a_second_sign_in_is_the_same_user(client, provider):
    r = sign_in(client, provider, next_url="/work/")
    assert r.status_code == 302 and r["Location"] == "/work/"
    user = signed_in_user(client)
    assert (user.username, user.email, user.first_name) == ("ada", "ada@uni.example", "Ada")
    assert not user.has_usable_password()
    assert OIDCIdentity.objects.get(user=user).subject == "u-1001"

    provider.claims.update(email="ada.lovelace@uni.example", preferred_username="alovelace")  # the sub stays
    again = Client()
    assert sign_in(again, provider).status_code == 302
    assert signed_in_user(again) == user and get_user_model().objects.count() == 1


@pytest.mark.parametrize(
    "tamper",
    [
        {"nonce": "not-this-browsers-nonce"},
        {"aud": "another-client"},
        {"aud": [CLIENT_ID, "another-client"]},  # several audiences and no azp
        {"iss": "https://another-issuer.example"},
        {"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200},  # expired an hour ago
        {"_key": OTHER_KEY},  # signed with a key the provider's JWKS does not have
        {"_userinfo": {"sub": "u-666"}},  # userinfo about someone else than the id_token
    ],
    ids=["nonce", "audience", "audiences-without-azp", "issuer", "expired", "signature", "userinfo-sub"],
)
def test_a_token_that_does_not_verify_signs_nobody_in(client, provider, tamper):
    provider.tamper = tamper
    assert refused(sign_in(client, provider), client)
    assert not get_user_model().objects.exists() and not OIDCIdentity.objects.exists()


def test_a_state_this_browser_did_not_start_signs_nobody_in(client, provider):
    assert refused(sign_in(client, provider, state="forged-state"), client)
    fresh = Client()  # a callback in a browser that started no sign-in at all
    assert refused(fresh.get("/oidc/callback/", {"code": "x", "state": "y"}), fresh)
    assert not get_user_model().objects.exists()


def test_a_new_user_has_no_staff_rights_until_made_a_member(client, provider):
    project = services.create_project(
        name="Team only",
        slug="team-only",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
    )
    sign_in(client, provider)
    user = signed_in_user(client)
    assert not user.is_staff and not user.is_superuser
    assert not user.groups.exists() and not user.user_permissions.exists() and not user.get_all_permissions()
    for url in (
        "/studio/",
        "/projects/",
        f"/projects/{project.slug}/progress/",
        "/admin/",
        "/jobs/",
        "/api/jobs/0b6f8e5c-6c35-4c55-9d3e-6a1d2f0f4d11/",
        f"/api/projects/{project.slug}/progress/",
    ):
        assert shut(client.get(url)), url
    assert (
        client.post(
            "/api/projects/", {"name": "Mine", "task_type": "sentence_label"}, content_type="application/json"
        ).status_code
        == 403
    )
    # made a viewer of the project by its owner: that project's pages open, read-only; no other project's
    other = services.create_project(
        name="Other team", slug="other-team", task_type="sentence_label", config={"labels": ["pro", "con"]}
    )
    owner = get_user_model().objects.create_superuser("boss", "boss@uni.example", "pw-boss-12345")
    teams.add_member(project, user.username, "viewer", by=owner)
    assert client.get(f"/studio/projects/{project.slug}/").status_code == 200
    assert client.get(f"/projects/{project.slug}/progress/").status_code == 200
    assert client.get(f"/api/projects/{project.slug}/progress/").status_code == 200
    assert client.get(f"/studio/projects/{project.slug}/settings/").status_code == 403
    assert b"Team only" in client.get("/studio/").content and b"Other team" not in client.get("/studio/").content
    assert client.get(f"/studio/projects/{other.slug}/").status_code == 404
    assert shut(client.get("/studio/new/")) and shut(client.get("/admin/"))
    user.refresh_from_db()
    assert not user.is_staff and not user.groups.exists()
    # opening an invite link makes it a worker, but no worker cookie or recovery code ever logs this account in
    r = client.get(f"/invite/{project.invite_token}/")
    assert r.status_code == 302 and identity.COOKIE not in r.cookies
    assert identity.recovery_code(services.worker_for_user(user)) == ""


def test_existing_accounts_are_matched_by_verified_email_only_and_never_a_worker(client, provider, settings):
    users = get_user_model().objects
    worker_user, _worker = identity.new_invite_worker()  # passwordless, with the same address
    users.filter(pk=worker_user.pk).update(email="ada@uni.example")
    provider.claims.update(email_verified=False)
    staff = users.create_user("ada", "ada@uni.example", "pw-ada-12345", is_staff=True)
    sign_in(client, provider)
    new = signed_in_user(client)  # an unverified address matches no one: a new account, not the username "ada"
    assert new not in (staff, worker_user) and new.username.startswith("ada-") and new.email == ""

    OIDCIdentity.objects.all().delete()
    provider.claims.update(sub="u-2002", email_verified=True)
    other = Client()
    sign_in(other, provider)
    assert signed_in_user(other) == staff  # the account with a password and this verified address, now linked
    assert OIDCIdentity.objects.get(subject="u-2002").user == staff

    settings.ARGORA_OIDC_MATCH_EMAIL = False
    provider.claims.update(sub="u-3003")
    third = Client()
    sign_in(third, provider)
    assert signed_in_user(third) not in (staff, worker_user, new)


def test_a_superuser_signs_in_only_when_allowed(client, provider, settings):
    root = get_user_model().objects.create_superuser("root", "ada@uni.example", "pw-root-12345")
    assert refused(sign_in(client, provider), client)
    assert not OIDCIdentity.objects.exists()  # nothing linked either
    settings.ARGORA_OIDC_ALLOW_SUPERUSERS = True
    sign_in(client, provider)
    assert signed_in_user(client) == root


def test_no_new_accounts_when_creating_them_is_off(client, provider, settings):
    settings.ARGORA_OIDC_CREATE_USERS = False
    assert refused(sign_in(client, provider), client)
    assert not get_user_model().objects.exists()


def test_the_login_page_shows_the_button_only_when_configured_and_passwords_still_work(
    client, settings, django_user_model
):
    settings.ARGORA_OIDC_ISSUER = ""
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b"Sign in with" not in page.content
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/", {"code": "x", "state": "y"}).status_code == 404

    settings.ARGORA_OIDC_ISSUER = "http://127.0.0.1:9/down"  # nothing listens: the provider is down
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    settings.ARGORA_OIDC_NAME = "Uni Example"
    settings.OIDC_TIMEOUT = 2
    page = client.get("/accounts/login/?next=/studio/")
    assert b"Sign in with Uni Example" in page.content and b"/oidc/authenticate/?next=/studio/" in page.content
    r = client.get("/oidc/authenticate/", follow=True)
    assert r.redirect_chain[-1][0] == "/accounts/login/" and b"Signing in with Uni Example did not work" in r.content

    django_user_model.objects.create_user("bob", password="pw-bob-12345")
    r = client.post("/accounts/login/", {"username": "bob", "password": "pw-bob-12345"})
    assert r.status_code == 302 and signed_in_user(client).username == "bob"
