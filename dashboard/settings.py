"""Cachescope settings: every value comes from the environment, and none is required.

With no configuration the dashboard runs on a SQLite file under ``CACHESCOPE_DATA_DIR`` and runs
its background jobs in-process, so one command gives a working dashboard. ``DATABASE_URL`` and
``CELERY_BROKER_URL`` switch to PostgreSQL and a real broker for a fleet.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from dashboard.access.client_address import trusted_proxy_networks
from dashboard.env import env_bool, env_choice, env_float, env_int, env_list, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent


def _site_dir() -> Path:
    """Where ``templates/`` and ``static/`` are: beside the packages in a checkout, under
    ``share/cachescope`` of the environment or the user's base once installed (setup.py)."""
    import site
    import sys

    for folder in (
        BASE_DIR,
        Path(sys.prefix) / "share/cachescope",
        Path(site.getuserbase()) / "share/cachescope",
    ):
        if (folder / "templates").is_dir():
            return folder
    return BASE_DIR


SITE_DIR = _site_dir()
DATA_DIR = Path(env_str("CACHESCOPE_DATA_DIR", str(BASE_DIR / "data"))).resolve()

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG and env_bool("CACHESCOPE_REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY is not set; production settings need one from the environment")
    # A per-install key kept in the data folder: sessions survive restarts without anyone having
    # to invent a secret, and no key is ever committed.
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    _key_file = DATA_DIR / "secret_key"
    if not _key_file.exists():
        from django.core.management.utils import get_random_secret_key

        _key_file.write_text(get_random_secret_key())
        _key_file.chmod(0o600)
    SECRET_KEY = _key_file.read_text().strip()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "axes",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Pages compress to a tenth (a session page's figures and tables are repetitive JSON and HTML).
    # Below WhiteNoise, which sends its own pre-compressed static files. Django pads the compressed
    # body with random bytes against BREACH, which pages carrying a CSRF token would otherwise invite.
    "django.middleware.gzip.GZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "dashboard.access.roles.NoRoleNoDataMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "dashboard.web.middleware.SecurityHeadersMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during authentication into its response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# WAL lets the page readers go on while an ingest writes; IMMEDIATE takes the write lock at BEGIN,
# so two writers queue (up to the timeout) instead of one failing half-way with "database is
# locked" when the other commits between its first read and its first write. Every SQLite
# database gets them, the default file and one a DATABASE_URL names alike.
SQLITE_OPTIONS = {
    "timeout": 20,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}

_database_url = env_url("DATABASE_URL", {"postgres", "postgresql", "sqlite"})
if _database_url:
    DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
    if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        DATABASES["default"]["OPTIONS"] = {**SQLITE_OPTIONS, **DATABASES["default"].get("OPTIONS", {})}
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "cachescope.sqlite3",
            # A file, not memory, so worker processes started by the tests see the test database.
            "TEST": {"NAME": DATA_DIR / "test-cachescope.sqlite3"},
            "OPTIONS": SQLITE_OPTIONS,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [SITE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # collectstatic (which `manage.py demo` runs too) writes each file under a name holding a hash of
    # its content, with gzip and brotli copies beside it; WhiteNoise serves those names with a year's
    # cache lifetime, so a browser fetches plotly.js once per release, compressed. With DEBUG on, or
    # before collectstatic, pages link the plain names.
    "staticfiles": {"BACKEND": "dashboard.web.static_storage.CollectedStaticFilesStorage"},
}
# Plain names are also served straight from static/ (with a short cache lifetime): the tests use
# them without collecting anything.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# Background jobs. Without a broker they run in the web process, right after the transaction that
# enqueued them commits, so the embedded default needs nothing else installed.
_broker_url = env_url("CELERY_BROKER_URL", {"redis", "rediss", "amqp", "amqps", "pyamqp", "memory"})
CELERY_TASK_ALWAYS_EAGER = not _broker_url
# In-process tasks never reach a broker; naming the in-memory one keeps Celery from reaching for
# its default AMQP server on localhost.
CELERY_BROKER_URL = _broker_url or "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ROUTES = {
    "dashboard.tasks.ingest*": {"queue": "ingest"},
    "dashboard.tasks.fold*": {"queue": "fold"},
    "dashboard.tasks.analyse*": {"queue": "fold"},
    "dashboard.tasks.refold*": {"queue": "refold"},
}
CELERY_TASK_DEFAULT_QUEUE = "default"
# Without a broker, `manage.py ingest` leaves the folds and analyses of what it stored to one
# background process and returns (dashboard/worker/drain.py); "inline" runs them in the command.
CACHESCOPE_FOLLOWUPS = env_choice("CACHESCOPE_FOLLOWUPS", ("background", "inline"))
# A claimed job is leased for this many seconds and renewed by its worker while it runs; a job
# whose worker died is handed to another within about one lease (the workers sweep every half lease).
CACHESCOPE_JOB_LEASE_SECONDS = env_int("CACHESCOPE_JOB_LEASE_SECONDS", 30, minimum=2)
# A task a worker took but never acknowledged (the worker died) goes back to the queue after this
# many seconds, for the next worker to run again (acks_late tasks are idempotent). A job's lease,
# not this, decides who runs it: a task handed out again while its job's lease is live does nothing.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
}

# Alerts (dashboard/alerts/): every rule is evaluated this often, by Celery beat with a broker
# (`celery -A dashboard beat`) and by the web server's own runner without one; 0 stops the runner.
CACHESCOPE_ALERTS_EVERY_SECONDS = env_int("CACHESCOPE_ALERTS_EVERY_SECONDS", 300)
CELERY_BEAT_SCHEDULE = {
    "alerts-check": {
        "task": "dashboard.tasks.alerts_check",
        "schedule": float(CACHESCOPE_ALERTS_EVERY_SECONDS or 300),
        # A check that waited a whole interval in the queue is overtaken by the next one.
        "options": {"expires": float(CACHESCOPE_ALERTS_EVERY_SECONDS or 300)},
    }
}
# Where alerts go unless a rule names its own: a webhook (a JSON POST with Slack's `text`) and
# comma-separated e-mail addresses, sent through the EMAIL_* settings below.
CACHESCOPE_ALERT_WEBHOOK = env_url("CACHESCOPE_ALERT_WEBHOOK", {"http", "https"})
CACHESCOPE_ALERT_EMAIL = env_str("CACHESCOPE_ALERT_EMAIL", "")
CACHESCOPE_ALERT_WEBHOOK_TRIES = env_int("CACHESCOPE_ALERT_WEBHOOK_TRIES", 3, minimum=1)
CACHESCOPE_ALERT_WEBHOOK_BACKOFF_SECONDS = env_float("CACHESCOPE_ALERT_WEBHOOK_BACKOFF_SECONDS", 2.0)
CACHESCOPE_ALERT_WEBHOOK_TIMEOUT_SECONDS = env_int("CACHESCOPE_ALERT_WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
# A notification still unsent after this many hours of passes is given up (and logged).
CACHESCOPE_ALERT_DELIVERY_HOURS = env_int("CACHESCOPE_ALERT_DELIVERY_HOURS", 24, minimum=1)
# The dashboard's address as people reach it, for the links in notifications.
CACHESCOPE_BASE_URL = env_url("CACHESCOPE_BASE_URL", {"http", "https"}) or "http://localhost:8000"
# GET /metrics (Prometheus) answers a scraper sending `Authorization: Bearer <this>`; unset, it is off.
CACHESCOPE_METRICS_TOKEN = env_str("CACHESCOPE_METRICS_TOKEN", "")
CACHESCOPE_METRICS_CACHE_SECONDS = env_int("CACHESCOPE_METRICS_CACHE_SECONDS", 30)
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "cachescope@localhost")

# Ingestion limits, applied before anything is decompressed or parsed.
CACHESCOPE_MAX_UPLOAD_BYTES = env_int("CACHESCOPE_MAX_UPLOAD_BYTES", 256 * 1024 * 1024, minimum=1)
# Files one upload may unpack to: a zip of many thousand tiny members costs a worker minutes of
# per-file work whatever their size.
CACHESCOPE_UPLOAD_MAX_FILES = env_int("CACHESCOPE_UPLOAD_MAX_FILES", 10_000, minimum=1)
# An upload's files are deleted once it is ingested; a failed or never-queued upload keeps them this
# many days for a retry.
CACHESCOPE_UPLOAD_RETENTION_DAYS = env_int("CACHESCOPE_UPLOAD_RETENTION_DAYS", 7, minimum=0)
# The ingestion API refuses a body past this size, compressed as sent and again decompressed.
CACHESCOPE_API_MAX_BYTES = env_int("CACHESCOPE_API_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)
# ... and past this many sessions, or event and request lines, in one body: a batch at the limits
# is stored in a few seconds, well inside the web worker's timeout.
CACHESCOPE_API_MAX_SESSIONS = env_int("CACHESCOPE_API_MAX_SESSIONS", 200, minimum=1)
CACHESCOPE_API_MAX_RECORDS = env_int("CACHESCOPE_API_MAX_RECORDS", 50_000, minimum=1)
# A batch sent to POST /api/v1/batches is stored by a worker, not the web process, so it may be
# larger; the worker still holds the parsed batch in memory, which these bound.
CACHESCOPE_API_BATCH_MAX_BYTES = env_int("CACHESCOPE_API_BATCH_MAX_BYTES", 512 * 1024 * 1024, minimum=1024)
CACHESCOPE_API_BATCH_MAX_SESSIONS = env_int("CACHESCOPE_API_BATCH_MAX_SESSIONS", 5_000, minimum=1)
CACHESCOPE_API_BATCH_MAX_RECORDS = env_int("CACHESCOPE_API_BATCH_MAX_RECORDS", 500_000, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024, minimum=1024)

# Security defaults; TLS-only settings switch on with CACHESCOPE_TLS behind a TLS proxy.
_tls = env_bool("CACHESCOPE_TLS", False)
SESSION_COOKIE_SECURE = _tls
CSRF_COOKIE_SECURE = _tls
SECURE_SSL_REDIRECT = _tls and env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if _tls else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _tls
# Preload lists are slow to leave, so a site joins them only when its operator asks.
SECURE_HSTS_PRELOAD = _tls and env_bool("CACHESCOPE_HSTS_PRELOAD", False)
# The deploy check's advice to preload (W021) is a choice for the operator, not a fault.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
if _tls:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

# /healthz adds each check's error and timing for a request bearing this token (none without one).
CACHESCOPE_HEALTH_TOKEN = env_str("CACHESCOPE_HEALTH_TOKEN")

# Shared by every web process at scale; per-process memory on the embedded default.
_cache_url = env_url("CACHE_URL", {"redis", "rediss"})
# A Redis that does not answer (a host gone, a full network) costs a page a second, not a hang; one
# that refuses connections costs nothing, and either way pages go on without it.
_CACHE_SOCKET_OPTIONS = {"socket_connect_timeout": 1, "socket_timeout": 1}
CACHES = {
    "default": (
        {
            "BACKEND": "dashboard.storage.shared_cache.TolerantRedisCache",
            "LOCATION": _cache_url,
            "OPTIONS": _CACHE_SOCKET_OPTIONS,
        }
        if _cache_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    ),
}
if _cache_url:
    # The login throttle's own connection, which raises when Redis is down, so its handler counts
    # in the database instead of not counting (dashboard/access/login_throttle.py).
    CACHES["axes"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": _cache_url,
        "OPTIONS": _CACHE_SOCKET_OPTIONS,
    }
    AXES_CACHE = "axes"

# Login throttling (django-axes): failures count per user name *and* client address, so a flood of
# made-up user names from one address locks out no real user there, and a guessed user name is
# locked only for the address guessing it. The count lives where every web process sees it: the
# Redis cache when CACHE_URL names one (the database while Redis is down), else the database
# (shared even by the embedded default).
CACHESCOPE_LOGIN_FAILURE_LIMIT = env_int("CACHESCOPE_LOGIN_FAILURE_LIMIT", 10, minimum=1)
CACHESCOPE_LOGIN_LOCKOUT_SECONDS = env_int("CACHESCOPE_LOGIN_LOCKOUT_SECONDS", 900, minimum=1)
# Proxies (addresses or networks) whose X-Forwarded-For is believed; see dashboard/access/client_address.py.
CACHESCOPE_TRUSTED_PROXIES = env_list("CACHESCOPE_TRUSTED_PROXIES", [])
trusted_proxy_networks(CACHESCOPE_TRUSTED_PROXIES)  # a bad value stops the start, naming it
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = CACHESCOPE_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=CACHESCOPE_LOGIN_LOCKOUT_SECONDS)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "dashboard.access.client_address.client_address"
AXES_LOCKOUT_CALLABLE = "dashboard.access.login.login_locked_out"
AXES_HANDLER = (
    "dashboard.access.login_throttle.CacheOrDatabaseHandler"
    if _cache_url
    else "axes.handlers.database.AxesDatabaseHandler"
)
# Failures only: a row per successful login would grow without end and say nothing about guessing.
AXES_DISABLE_ACCESS_LOG = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
