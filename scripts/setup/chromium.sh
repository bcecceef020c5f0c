#!/usr/bin/env bash
# The web console's end-to-end tests (test/console): Debian's chromium, driven headless by playwright-core through its
# executable path (playwright's own browser download needs the internet). A font package so pages render readable
# text in the screenshots the test run writes to docs/console/.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -d /usr/share/fonts/truetype/dejavu ] || missing+=(fonts-dejavu-core)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[execgate setup] installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "[execgate setup] $(/usr/bin/chromium --version 2>/dev/null | head -1) ready"
