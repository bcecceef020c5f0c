#!/usr/bin/env bash
# pyodide's memory restore reads the kernel's write reports through a small C addon (adapters/pyodide/write-watch.c),
# which `npm run build` compiles with the system's C compiler; the tests expect it built on Linux. Without a compiler
# execgate still works (pyodide compares its whole memory instead), so this is for the tests, not for users.
set -euo pipefail
if ! command -v cc >/dev/null || [ ! -e /usr/include/linux/userfaultfd.h ]; then
  echo "[execgate setup] installing a C compiler (gcc, libc6-dev, linux-libc-dev)"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends gcc libc6-dev linux-libc-dev >/dev/null
fi
echo "[execgate setup] $(cc --version | head -1) ready"
