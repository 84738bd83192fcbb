#!/usr/bin/env sh
# Installs the adapter's exact dependencies (package-lock.json) into
# node_modules/ beside this file. Idempotent: npm ci replaces node_modules.
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
