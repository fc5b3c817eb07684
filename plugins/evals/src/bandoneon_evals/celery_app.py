"""The Celery app a worker runs: ``celery -A bandoneon_evals.celery_app worker --pool solo``.

Configured by ``BANDONEON_EVALS_BROKER`` (default ``redis://127.0.0.1:6379/0``),
``BANDONEON_EVALS_RESULT_BACKEND`` (default: the broker) and
``BANDONEON_EVALS_VISIBILITY_TIMEOUT`` (seconds; longer than the longest case). The modules
named by the eval's ``make_agent`` and scorers import paths must be importable here.
"""

from .celery_backend import worker_app_from_env

app = worker_app_from_env()
