#!/usr/bin/env bash
# Installs the delayed_job adapter's runtime from Debian's packages, pinned.
# Idempotent: a package already at its pinned version is left as it is.
# Ruby gems are not fetched from their own registry: Debian's packages only.
set -euo pipefail

PACKAGES=(
  "ruby=1:3.1"
  "ruby-delayed-job=4.1.9-1.1"
  "ruby-delayed-job-active-record=4.1.6-3.1"
  "ruby-activerecord=2:6.1.7.10+dfsg-1~deb12u4"
  "ruby-pg=1.4.5-1+b1"
  "ruby-mysql2=0.5.3-4+b1"
  "ruby-sqlite3=1.4.2-4+b3"
)

missing=()
for spec in "${PACKAGES[@]}"; do
  name="${spec%%=*}"
  want="${spec#*=}"
  have="$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)"
  if [[ "$have" != "install ok installed $want" ]]; then
    missing+=("$spec")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "delayed_job adapter: every package is at its pinned version"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
