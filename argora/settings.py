"""Argora settings: twelve-factor, everything that differs between machines comes from the environment.

Every variable read here is listed in README.md ("Configuration"). Defaults give the embedded set-up:
SQLite under ``var/``, a broker that needs no server (kombu's filesystem transport), artifacts under ``var/``.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

import dj_database_url
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


VAR_DIR = Path(os.environ.get("ARGORA_VAR_DIR", BASE_DIR / "var")).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


def local_secret_key(key_file: Path) -> str:
    """The key in ``key_file``, made on first use: written whole to a private (0600) temporary file and linked into
    place, so that of several processes starting at once exactly one key wins and every process reads that one."""
    if not key_file.exists():
        fd, tmp = tempfile.mkstemp(prefix=".secret_key.", dir=key_file.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(50))
            os.link(tmp, key_file)
        except FileExistsError:  # another process linked its key first: use that one
            pass
        finally:
            os.unlink(tmp)
    if key_file.stat().st_mode & 0o077:  # a key file made by an older version was readable by everyone
        key_file.chmod(0o600)
    return key_file.read_text().strip()


DEBUG = env_bool("DJANGO_DEBUG", False)
# An embedded/dev install gets a stable per-checkout key in var/; production sets DJANGO_SECRET_KEY.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "") or local_secret_key(VAR_DIR / "secret_key")

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")
CSRF_FAILURE_VIEW = "argora.errors.csrf_failure"  # a JSON 403 under /api/, Django's page elsewhere
# HTTPS deployments (README "Security"): behind a TLS-terminating proxy set DJANGO_SECURE_PROXY_SSL_HEADER=1 and
# DJANGO_HTTPS=1 (secure cookies, redirect to https, HSTS for DJANGO_SECURE_HSTS_SECONDS).
HTTPS = env_bool("DJANGO_HTTPS", False)
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("DJANGO_SECURE_PROXY_SSL_HEADER", False) else None
)
# Proxies (addresses or CIDR networks) whose X-Forwarded-For is believed: the client address of per-address limits is
# the right-most forwarded address that is not one of them (argora.clientaddr). Empty: REMOTE_ADDR as it is.
ARGORA_TRUSTED_PROXIES = env_list("ARGORA_TRUSTED_PROXIES", "")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", HTTPS)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", HTTPS)
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", str(31536000 if HTTPS else 0)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
# Content-Security-Policy (django-csp; SECURITY.md "Inputs"): scripts only from this origin or an inline <script> with
# the response's nonce (``nonce="{{ request.csp_nonce }}"``): no inline event handler or javascript: URL runs. Styles
# may be inline (the templates', the admin's and Swagger UI's style attributes: a nonce cannot allow an attribute).
# Images also as data: URLs (Swagger UI's icons) and from ARGORA_CSP_IMG_SRC (e.g. guidelines' pictures elsewhere).
# No page may be framed but the MTurk ExternalQuestion pages, by MTurk (mturk.views.framed_by_mturk); forms post here.
ARGORA_CSP_IMG_SRC = env_list("ARGORA_CSP_IMG_SRC", "")
ARGORA_CSP_REPORT_URI = os.environ.get("ARGORA_CSP_REPORT_URI", "")  # where browsers report violations
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", *ARGORA_CSP_IMG_SRC],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
        **({"report-uri": [ARGORA_CSP_REPORT_URI]} if ARGORA_CSP_REPORT_URI else {}),
    }
}
# Public base URL (used for MTurk ExternalQuestion URLs and links in e-mails / CLI output).
ARGORA_PUBLIC_URL = os.environ.get("ARGORA_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")

# --- Task types -------------------------------------------------------------------------------------
# Every task type package is a Django app labelled by its folder's name (its models, migrations and management
# commands are found the way Django finds any app's): the packages under annotation/task_types/ and those named in
# ARGORA_TASK_TYPE_PACKAGES (dotted paths, comma-separated; see annotation.task_types). The engine names none.
ARGORA_TASK_TYPE_PACKAGES = env_list("ARGORA_TASK_TYPE_PACKAGES", "")


def task_type_apps(extra: list[str]) -> list[str]:
    """The INSTALLED_APPS entries of the task type packages: every package folder under ``annotation/task_types/``
    (found on disk: settings load before any app may be imported), then ``extra`` in its order."""
    folder = BASE_DIR / "annotation" / "task_types"
    builtin = [f"annotation.task_types.{p.parent.name}" for p in sorted(folder.glob("*/__init__.py"))]
    return builtin + [dotted for dotted in extra if dotted not in builtin]


TASK_TYPE_APPS = task_type_apps(ARGORA_TASK_TYPE_PACKAGES)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files: /api/docs/ works offline
    "csp",  # django-csp: the Content-Security-Policy header (below)
    "django_celery_results",
    "argora",
    "corpus",
    "annotation",
    *TASK_TYPE_APPS,
    "mturk",
    "prolific",
    "ml",
]

MIDDLEWARE = [
    "argora.budget.ServiceBudgetMiddleware",  # one time budget per request for Redis calls (cache, broker)
    "argora.request_memo.RequestMemoMiddleware",  # answers remembered for one request (roles: annotation.access)
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response, static files included (above WhiteNoise, which answers those itself)
    "csp.middleware.CSPMiddleware",
    # Static files (the admin's CSS included) straight from gunicorn: no separate web server needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "argora.inputs.InputGuardMiddleware",  # no NUL in queries and forms (a 400, not a database error)
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "argora.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            # task type packages bring their own templates (annotation/task_types/<name>/templates/)
            "loaders": [
                (
                    "django.template.loaders.cached.Loader",
                    [
                        "django.template.loaders.filesystem.Loader",
                        "annotation.task_types.assets.AppDirectoriesLoader",  # the apps' templates/, but a task type's
                        "annotation.task_types.assets.Loader",
                    ],
                )
            ],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "argora.context_processors.staff_nav",  # the bar's staff links: members of a team only
            ],
        },
    },
]

WSGI_APPLICATION = "argora.wsgi.application"
ASGI_APPLICATION = "argora.asgi.application"

# --- Database ---------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'argora.sqlite3'}"
# Persistent connections (with a health check before reuse): opening a PostgreSQL connection per request
# roughly halved HTTP throughput in bench/allocation.py.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")), conn_health_checks=True
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + IMMEDIATE transactions: writers queue on the lock instead of failing half-way with
    # "database is locked" on upgrade; the timeout bounds how long they queue.
    DATABASES["default"]["ENGINE"] = "argora.sqlite3"  # Django's backend with a queue for writers (its docstring)
    DATABASES["default"]["OPTIONS"] = {
        "timeout": int(os.environ.get("SQLITE_TIMEOUT", "30")),
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file (not :memory:) so that a celery worker subprocess and a live server share the test DB.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_argora.sqlite3")}
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The per-HIT statements (annotation/rawsql.py's cursor) are prepared on the server once a connection has run
    # them this many times; "off" behind a transaction-pooling proxy that cannot keep prepared statements. The ORM's
    # own statements are bound on the client and never prepared (Django's default).
    _prepare = os.environ.get("DATABASE_PREPARE_THRESHOLD", "5")
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = None if _prepare == "off" else int(_prepare)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's hashers (PBKDF2 first) unless ARGORA_PASSWORD_HASHERS lists others: the first hashes new passwords, every
# one listed checks a stored hash. The test suite lists Django's fast MD5 hasher first (tests/conftest.py).
if os.environ.get("ARGORA_PASSWORD_HASHERS", "").strip():
    PASSWORD_HASHERS = env_list("ARGORA_PASSWORD_HASHERS", "")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("ARGORA_STATIC_ROOT", VAR_DIR / "static"))
STATICFILES_DIRS = [BASE_DIR / "argora" / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    # the apps' static/ folders, but a task type package's: that is served under task_types/<name>/ (the next one)
    "annotation.task_types.assets.AppDirectoriesFinder",
    "annotation.task_types.assets.Finder",  # annotation/task_types/<name>/static/
]
try:  # whitenoise serves STATIC_ROOT (filled by collectstatic; run_demo does it) and warns when it is missing
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("ARGORA_MEDIA_ROOT", VAR_DIR / "media"))
# The largest file the studio takes for an import (larger ones: the command line).
ARGORA_STUDIO_MAX_UPLOAD_MB = int(os.environ.get("ARGORA_STUDIO_MAX_UPLOAD_MB", "20"))
# Releases and trained models; on a cluster this is shared storage mounted on web and workers.
ARTIFACT_ROOT = Path(os.environ.get("ARGORA_ARTIFACT_ROOT", VAR_DIR / "artifacts"))

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- Institutional sign-in: OpenID Connect (argora.oidc, mozilla-django-oidc; README "Institutional sign-in") ------
# Off unless the issuer, client id and client secret are set. Endpoints come from <issuer>/.well-known/openid-
# configuration at the first sign-in (never at start-up); one set here wins. The backend answers only /oidc/callback/.
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", "argora.oidc.OIDCBackend"]
ARGORA_OIDC_ISSUER = os.environ.get("ARGORA_OIDC_ISSUER", "")  # exactly the provider's "issuer" (the id_token's iss)
ARGORA_OIDC_NAME = os.environ.get("ARGORA_OIDC_NAME", "your institution")  # "Sign in with <name>" on the login page
OIDC_RP_CLIENT_ID = os.environ.get("ARGORA_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("ARGORA_OIDC_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("ARGORA_OIDC_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("ARGORA_OIDC_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("ARGORA_OIDC_USERINFO_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("ARGORA_OIDC_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = os.environ.get("ARGORA_OIDC_SIGN_ALGO", "RS256")  # RS*/ES* with the JWKS; HS256: the secret
OIDC_RP_SCOPES = os.environ.get("ARGORA_OIDC_SCOPES", "openid email profile")
OIDC_USE_PKCE = env_bool("ARGORA_OIDC_USE_PKCE", True)
OIDC_TIMEOUT = float(os.environ.get("ARGORA_OIDC_TIMEOUT", "10"))  # seconds per call to the provider
OIDC_VERIFY_SSL = True
# Who a sign-in is (argora.oidc.user_for_claims): the account linked to its (iss, sub); else the one account with a
# password whose e-mail is the claims' *verified* e-mail; else a new plain account (no staff, group or permission).
ARGORA_OIDC_MATCH_EMAIL = env_bool("ARGORA_OIDC_MATCH_EMAIL", True)
ARGORA_OIDC_CREATE_USERS = env_bool("ARGORA_OIDC_CREATE_USERS", True)
ARGORA_OIDC_USERNAME_CLAIM = os.environ.get("ARGORA_OIDC_USERNAME_CLAIM", "preferred_username")  # else sub
ARGORA_OIDC_ALLOW_SUPERUSERS = env_bool("ARGORA_OIDC_ALLOW_SUPERUSERS", False)  # off: superusers use their password

# --- REST API ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "annotation.auth.WorkerTokenAuthentication",  # DRF's token auth, the user's Worker read in the same query
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": int(os.environ.get("ARGORA_API_PAGE_SIZE", "50")),
    "DEFAULT_SCHEMA_CLASS": "argora.schema.AutoSchema",  # drf-spectacular's, with every operation's error statuses
    "EXCEPTION_HANDLER": "argora.errors.api_exception_handler",
    # JSON bodies: bounded nesting, no NUL characters (argora.inputs); forms for the browsable admin-free API
    "DEFAULT_PARSER_CLASSES": [
        "argora.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],  # FieldError -> 400 {"errors": {field: reason}}
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Argora API",
    "DESCRIPTION": "Annotation and corpus-building platform for computational argumentation.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # the UI's JS/CSS from drf-spectacular-sidecar (our static files), never a CDN: /api/docs/ works offline
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -----------------------------------------------------------------------------------
# Default broker needs no server: kombu's filesystem transport over folders under var/broker.
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),  # broadcast/pidbox exchanges (else ./control in the CWD)
        "store_processed": False,
    }
# A message a worker took is redelivered after this long without an ack (Redis, SQS): longer than the longest job
# (training, silver annotation), or a running job would be started a second time. A killed worker's job is found
# sooner by beat's recover tasks. The other timeouts keep a hung broker from hanging the web request that enqueues.
ARGORA_LONGEST_JOB_SECONDS = int(os.environ.get("ARGORA_LONGEST_JOB_SECONDS", str(12 * 3600)))
# ARGORA_BROKER_VISIBILITY_TIMEOUT overrides it (seconds; sharded silver runs: longer than one shard takes), and
# ARGORA_BROKER_RESTORE_INTERVAL (seconds) makes the worker look for such messages that often (Redis; kombu's default 100).
ARGORA_BROKER_VISIBILITY_TIMEOUT = int(os.environ.get("ARGORA_BROKER_VISIBILITY_TIMEOUT") or ARGORA_LONGEST_JOB_SECONDS)
# seconds all Redis calls of one web request may take together, cache and broker (argora.budget)
ARGORA_SERVICE_TIMEOUT = float(os.environ.get("ARGORA_SERVICE_TIMEOUT", "2"))
# a Redis server that timed out or refused in a request is skipped by this process for so long (0: never)
ARGORA_SERVICE_BREAKER_SECONDS = float(os.environ.get("ARGORA_SERVICE_BREAKER_SECONDS", "5"))
if CELERY_BROKER_URL.startswith(("redis://", "rediss://", "sqs://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": ARGORA_BROKER_VISIBILITY_TIMEOUT,
        "socket_timeout": ARGORA_SERVICE_TIMEOUT,
        "socket_connect_timeout": ARGORA_SERVICE_TIMEOUT,
    }
    if os.environ.get("ARGORA_BROKER_RESTORE_INTERVAL"):
        CELERY_BROKER_TRANSPORT_OPTIONS.update(
            unacked_restore_interval=float(os.environ["ARGORA_BROKER_RESTORE_INTERVAL"]), unacked_restore_throttle=1
        )
if CELERY_BROKER_URL.startswith("redis://"):  # rediss:// keeps kombu's own: kombu turns TLS on by that scheme's name
    # kombu's Redis transport on argora.budget's connections, and a worker that survives its broker's restart
    CELERY_BROKER_TRANSPORT = "argora.broker:Transport"
# a worker (and beat) whose broker went away keeps trying to reconnect, never exits (celery's default: 100 tries)
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_TIMEOUT = ARGORA_SERVICE_TIMEOUT
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "django-db")
CELERY_RESULT_EXTENDED = True
CELERY_TASK_TRACK_STARTED = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_WORKER_PREFETCH_MULTIPLIER = int(os.environ.get("CELERY_WORKER_PREFETCH_MULTIPLIER", "1"))
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Periodic jobs (run `celery -A argora beat` once per deployment; "next HIT" also expires lazily).
CELERY_BEAT_SCHEDULE = {
    "expire-reservations": {"task": "annotation.expire_reservations", "schedule": 60.0},
    "recover-interrupted-training": {"task": "ml.recover_interrupted", "schedule": 120.0},
}

# --- Cache ------------------------------------------------------------------------------------
# Job progress lives here (not in the database) so that a job running inside one long transaction still
# shows its progress to other processes. Shared by web and workers: a folder on one machine, Redis at scale.
CACHE_URL = os.environ.get("CACHE_URL", "")


def cache_settings(url: str) -> dict:
    """``CACHES`` for ``CACHE_URL``: Redis with short socket timeouts (a hung -- not down -- Redis must not hang the
    requests that use it, e.g. a submission's debounce lock), else a folder."""
    if url.startswith(("redis://", "rediss://")):
        timeout = ARGORA_SERVICE_TIMEOUT / 4
        return {
            "default": {
                "BACKEND": "argora.budget.RedisCache",
                "LOCATION": url,  # Django's, on the request budget
                "OPTIONS": {"socket_timeout": timeout, "socket_connect_timeout": timeout},
            }
        }
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": url or str(VAR_DIR / "cache"),
        }
    }


CACHES = cache_settings(CACHE_URL)

# --- Logging ----------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("ARGORA_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- Models -----------------------------------------------------------------------------------
# Name or local path of the default encoder (None = the packaged all-MiniLM-L6-v2).
ARGORA_DEFAULT_ENCODER = os.environ.get("ARGORA_DEFAULT_ENCODER", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# --- MTurk (Amazon Mechanical Turk) -------------------------------------------------------------
# Credentials: boto3's environment chain only (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE), never the DB.
# New projects publish to the sandbox unless their MTurk settings say production.
# Claims a platform has not confirmed yet (MTurk accepts): open reservations per claimed id, accepts per client
# address within a reservation's lifetime (annotation.services.reserve_hit_for_claim).
ARGORA_UNCONFIRMED_PER_WORKER = int(os.environ.get("ARGORA_UNCONFIRMED_PER_WORKER", "2"))
ARGORA_UNCONFIRMED_PER_ADDRESS = int(os.environ.get("ARGORA_UNCONFIRMED_PER_ADDRESS", "6"))
ARGORA_MTURK_SANDBOX = env_bool("ARGORA_MTURK_SANDBOX", True)
ARGORA_MTURK_FRAME_HEIGHT = int(os.environ.get("ARGORA_MTURK_FRAME_HEIGHT", "800"))
# Salt of the signed assignmentId/workerId/hitId binding on the ExternalQuestion page (signed with SECRET_KEY).
ARGORA_MTURK_SIGNING_SALT = os.environ.get("ARGORA_MTURK_SIGNING_SALT", "argora.mturk.binding")
ARGORA_MTURK_BINDING_MAX_AGE = int(os.environ.get("ARGORA_MTURK_BINDING_MAX_AGE", str(14 * 24 * 3600)))
# Extra allowed turkSubmitTo origins (MTurk's www/workersandbox hosts are always allowed).
ARGORA_MTURK_SUBMIT_TO = env_list("ARGORA_MTURK_SUBMIT_TO", "")
# A local stand-in for MTurk's externalSubmit at /mturk/_test/turk/mturk/externalSubmit (also on with DEBUG).
ARGORA_MTURK_FAKE_TURK = env_bool("ARGORA_MTURK_FAKE_TURK", False)
CELERY_BEAT_SCHEDULE["mturk-sync"] = {
    "task": "mturk.sync_all",
    "schedule": float(os.environ.get("ARGORA_MTURK_SYNC_SECONDS", "600")),
}

# --- Prolific ----------------------------------------------------------------------------------------
# The API token comes from the environment only (never the DB); the webhook secret is the one Prolific returns from
# POST /api/v1/hooks/secrets/ (``manage.py prolific hooks``). Money amounts are in cents of the account's currency.
PROLIFIC_API_TOKEN = os.environ.get("PROLIFIC_API_TOKEN", "")
ARGORA_PROLIFIC_API_URL = os.environ.get("ARGORA_PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
# Where a finished participant is sent back: <app url>/submissions/complete?cc=<completion code>
ARGORA_PROLIFIC_APP_URL = os.environ.get("ARGORA_PROLIFIC_APP_URL", "https://app.prolific.com").rstrip("/")
ARGORA_PROLIFIC_CURRENCY = os.environ.get("ARGORA_PROLIFIC_CURRENCY", "GBP").upper()
# The wage floor per hour; default: the rate Prolific recommends (GBP 9.00 / USD 12.00 an hour; its hard minimum is
# GBP 6.00 / USD 8.00). A study whose reward per place pays less for its estimated time is refused.
ARGORA_PROLIFIC_MIN_HOURLY_CENTS = int(
    os.environ.get("ARGORA_PROLIFIC_MIN_HOURLY_CENTS") or (1200 if ARGORA_PROLIFIC_CURRENCY == "USD" else 900)
)
ARGORA_PROLIFIC_WEBHOOK_SECRET = os.environ.get("ARGORA_PROLIFIC_WEBHOOK_SECRET", "")
ARGORA_PROLIFIC_WEBHOOK_MAX_AGE = int(os.environ.get("ARGORA_PROLIFIC_WEBHOOK_MAX_AGE", "300"))  # seconds of clock skew
ARGORA_PROLIFIC_WORKSPACE_ID = os.environ.get("ARGORA_PROLIFIC_WORKSPACE_ID", "")
CELERY_BEAT_SCHEDULE["prolific-sync"] = {
    "task": "prolific.sync_all",
    "schedule": float(os.environ.get("ARGORA_PROLIFIC_SYNC_SECONDS", "600")),
}

# --- model annotators: LLMs behind an OpenAI-compatible chat endpoint (annotation.model_annotators, ml.llm) ---------
# ``POST {ARGORA_LLM_BASE_URL}/chat/completions`` as vLLM (http://localhost:8000/v1), Ollama (http://localhost:11434/v1)
# and llama.cpp's server (http://localhost:8080/v1) serve it. Each model annotator may override the base URL and the
# model, and name another environment variable for its key (``api_key_env``); the key itself never enters the DB.
ARGORA_LLM_BASE_URL = os.environ.get("ARGORA_LLM_BASE_URL", "http://localhost:8000/v1")
ARGORA_LLM_MODEL = os.environ.get("ARGORA_LLM_MODEL", "")
ARGORA_LLM_API_KEY = os.environ.get("ARGORA_LLM_API_KEY", "")
ARGORA_LLM_TIMEOUT = float(os.environ.get("ARGORA_LLM_TIMEOUT", "60"))  # seconds to read one reply
ARGORA_LLM_MAX_ATTEMPTS = int(os.environ.get("ARGORA_LLM_MAX_ATTEMPTS", "3"))  # tries per item before giving up
ARGORA_LLM_BACKOFF = tuple(float(x) for x in os.environ.get("ARGORA_LLM_BACKOFF", "2,4,8").split(","))  # s per retry
ARGORA_LLM_MAX_SLEEP = float(os.environ.get("ARGORA_LLM_MAX_SLEEP", "60"))  # longest wait a Retry-After gets
# price per 1,000 tokens (prompt + completion) for the cost column; 0 = not recorded
ARGORA_LLM_COST_PER_1K_TOKENS = float(os.environ.get("ARGORA_LLM_COST_PER_1K_TOKENS", "0"))
# An annotator's ``api_key_env`` must start with this (no annotator can send DJANGO_SECRET_KEY, PROLIFIC_API_TOKEN,
# AWS keys...); empty: no annotator names a variable of its own.
ARGORA_LLM_KEY_PREFIX = os.environ.get("ARGORA_LLM_KEY_PREFIX", "ARGORA_LLM_KEY_")
# Outbound calls to a URL a user chose (argora.outbound: an LLM annotator's base URL): a host resolving to a loopback,
# link-local, private, CGNAT, unspecified, multicast or reserved address is refused unless listed here (comma-separated
# host names, addresses, CIDR networks: ``llm.internal,10.1.0.0/16``). The operator's ARGORA_LLM_BASE_URL is trusted.
ARGORA_OUTBOUND_ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ARGORA_OUTBOUND_ALLOWED_HOSTS", "").split(",") if h.strip()
]
