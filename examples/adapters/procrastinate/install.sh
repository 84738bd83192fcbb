#!/usr/bin/env sh
# Installs what examples/adapters/procrastinate/adapter.py needs, pinned;
# idempotent (pip leaves a satisfied pin alone). Needs python3 (3.11) with
# pip. The psycopg pins are SAQ's too (examples/adapters/saq/install.sh),
# so both adapters share one environment.
set -eu
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    'procrastinate==3.10.0' 'psycopg==3.3.9' 'psycopg-pool==3.3.3'
python3 -c 'import procrastinate, psycopg' # the queue and its driver import
