"""Scale-out wiring: running the code location's jobs on the Celery executor."""
