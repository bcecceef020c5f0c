#!/usr/bin/env bash
# The process adapter's sandbox: bubblewrap and dash (its launcher) from Debian, and user namespaces enabled.
set -euo pipefail
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
[ -x /usr/bin/dash ] || missing+=(dash)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[execgate setup] installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ -e /proc/sys/kernel/unprivileged_userns_clone ] && [ "$(cat /proc/sys/kernel/unprivileged_userns_clone)" = 0 ]; then
  echo "[execgate setup] enabling unprivileged user namespaces (kernel.unprivileged_userns_clone=1)"
  sysctl -q -w kernel.unprivileged_userns_clone=1
fi
if ! bwrap --unshare-all --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 /usr/bin/true; then
  echo "[execgate setup] bubblewrap is installed but cannot create namespaces here" >&2
  exit 1
fi
echo "[execgate setup] bubblewrap $(bwrap --version | cut -d' ' -f2) ready"
