#!/usr/bin/env bash
# Installs and starts everything the test suite needs on a fresh Debian machine (Node 20 already present):
# each scripts/setup/*.sh is idempotent and fast when its component is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

shopt -s nullglob
scripts=(scripts/setup/*.sh)
if [ ${#scripts[@]} -eq 0 ]; then
  echo "[execgate setup] nothing to set up beyond npm packages"
  exit 0
fi
for script in "${scripts[@]}"; do
  echo "[execgate setup] $script"
  bash "$script"
done
