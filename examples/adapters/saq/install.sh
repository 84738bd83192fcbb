#!/usr/bin/env sh
# Installs what examples/adapters/saq/adapter.py needs, pinned; idempotent
# (pip leaves a satisfied pin alone). Needs python3 (3.11) with pip.
set -eu
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    'saq[postgres]==0.26.4' 'psycopg==3.3.9' 'psycopg-pool==3.3.3' 'croniter==7.0.0'
python3 -c 'import saq.queue.postgres' # the PostgreSQL queue imports
