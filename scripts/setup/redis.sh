#!/usr/bin/env bash
# The distributed task store's tests: Debian's redis-server. The tests start their own server on a free loopback port
# (no service is enabled or started here).
set -euo pipefail
if ! command -v redis-server >/dev/null; then
  echo "[execgate setup] installing redis-server"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  # Debian's package starts a service on 6379; the tests do not use it.
  ($SUDO systemctl disable --now redis-server 2>/dev/null || $SUDO service redis-server stop 2>/dev/null) || true
fi
echo "[execgate setup] $(redis-server --version | cut -d' ' -f1-3) ready"
