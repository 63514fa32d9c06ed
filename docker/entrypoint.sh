#!/bin/sh
# Argora container entrypoint. The first argument picks the role:
#   web         apply migrations, then serve argora.wsgi with gunicorn on :${PORT:-8000}, ${WEB_CONCURRENCY:-4} workers
#   worker      Celery worker on the "default" queue (imports, releases, agreement, MTurk sync)
#   gpu-worker  Celery worker on the "gpu" queue: one task at a time, no prefetch (training, silver annotation)
#   beat        Celery beat, the periodic jobs (run ONE per deployment); its schedule file in $ARGORA_VAR_DIR
#   manage ...  any manage.py command, e.g. `manage createsuperuser` or `manage import_corpus /data/x.tsv --format jsonl`
# Anything else is executed as given (e.g. `sh`).
set -eu

role="${1:-web}"
[ "$#" -gt 0 ] && shift

case "$role" in
  web)
    python manage.py migrate --noinput
    exec gunicorn argora.wsgi \
      --bind "0.0.0.0:${PORT:-8000}" \
      --workers "${WEB_CONCURRENCY:-4}" \
      --reuse-port \
      --timeout "${GUNICORN_TIMEOUT:-60}" \
      --access-logfile - \
      "$@"
    ;;
  worker)
    exec celery -A argora worker -Q default \
      -n "default@%h" \
      --loglevel "${CELERY_LOG_LEVEL:-INFO}" \
      "$@"
    ;;
  gpu-worker)
    exec celery -A argora worker -Q gpu --concurrency 1 --prefetch-multiplier 1 \
      -n "gpu@%h" \
      --loglevel "${CELERY_LOG_LEVEL:-INFO}" \
      "$@"
    ;;
  beat)
    exec celery -A argora beat \
      --schedule "${ARGORA_VAR_DIR:-/app/var}/celerybeat-schedule" \
      --loglevel "${CELERY_LOG_LEVEL:-INFO}" \
      "$@"
    ;;
  manage)
    exec python manage.py "$@"
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
