#!/usr/bin/env bash
# The Python client's tests (clients/python, test/client/python-client.test.ts): Debian's python3 with venv (for the
# `pip install ./clients/python` check). The client itself needs only the standard library.
set -euo pipefail
if ! [ -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
  echo "[execgate setup] installing python3 and python3-venv"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null
fi
echo "[execgate setup] $(/usr/bin/python3 --version) with venv ready"
