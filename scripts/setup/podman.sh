#!/usr/bin/env bash
# The docker adapter's engine for tests: podman serving the Docker Engine API on a unix socket, and a sandbox image
# with python3 and node built from Debian packages with debootstrap (no registry needed), cached between runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
SOCKET=${EXECGATE_PODMAN_SOCKET:-/run/execgate-podman/podman.sock}
IMAGE=${EXECGATE_SANDBOX_IMAGE:-execgate-sandbox:bookworm}
export CONTAINERS_CONF="$PWD/scripts/podman/containers.conf"
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo

missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[execgate setup] installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The API service: started once, left running for the test run. One left behind by an older setup whose working
# directory has since been deleted answers pings but cannot start a container: it is replaced.
SERVICE_PID=$(pgrep -f "podman system service --time=0 unix://$SOCKET" | head -1 || true)
if [ -n "$SERVICE_PID" ] && $SUDO readlink "/proc/$SERVICE_PID/cwd" | grep -q ' (deleted)$'; then
  echo "[execgate setup] restarting the podman service: its working directory was deleted"
  $SUDO kill "$SERVICE_PID"
  # kill -0 through sudo too: without it a non-root user reads EPERM as "gone" and pings the old service.
  for _ in $(seq 50); do $SUDO kill -0 "$SERVICE_PID" 2>/dev/null || break; sleep 0.1; done
fi
if ! curl -sf --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; then
  $SUDO mkdir -p "$(dirname "$SOCKET")"
  echo "[execgate setup] starting podman system service on $SOCKET"
  # Started from /, not from this checkout: conmon inherits the service's working directory and fails every container
  # ("write child: broken pipe") once that directory is deleted, e.g. when a CI clone is removed.
  # Only the service runs in the background, with its own stdio: a background list would keep this script's stdout
  # open, and whoever reads it (a pipe, a CI log) would wait for the service to end.
  (cd / || exit 1; nohup $SUDO env CONTAINERS_CONF="$CONTAINERS_CONF" podman system service --time=0 "unix://$SOCKET" </dev/null >/tmp/execgate-podman-service.log 2>&1 &)
  for _ in $(seq 50); do curl -sf --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1 && break; sleep 0.2; done
  curl -sf --unix-socket "$SOCKET" http://d/_ping >/dev/null || { echo "[execgate setup] podman service did not start; see /tmp/execgate-podman-service.log" >&2; exit 1; }
fi

# The image: debootstrap a minimal Debian with python3 and nodejs, import it. Built once per machine.
if ! $SUDO env CONTAINERS_CONF="$CONTAINERS_CONF" podman image exists "$IMAGE"; then
  ROOTFS=$(mktemp -d /var/tmp/execgate-rootfs.XXXXXX)
  MIRROR=${EXECGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  echo "[execgate setup] building $IMAGE with debootstrap from $MIRROR (about two minutes, once)"
  $SUDO debootstrap --variant=minbase --include=python3-minimal,libpython3-stdlib,nodejs bookworm "$ROOTFS" "$MIRROR" >/tmp/execgate-debootstrap.log 2>&1 \
    || { echo "[execgate setup] debootstrap failed; see /tmp/execgate-debootstrap.log" >&2; exit 1; }
  $SUDO rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
  $SUDO tar -C "$ROOTFS" -c . | $SUDO env CONTAINERS_CONF="$CONTAINERS_CONF" podman import --change 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
  $SUDO rm -rf "$ROOTFS"
fi
# Containers an earlier run left behind (a service that crashed mid-run keeps the ones it was running, exited) are
# removed, so what the tests find afterwards is this run's.
LEFT=$($SUDO env CONTAINERS_CONF="$CONTAINERS_CONF" podman ps -aq --filter label=io.execgate.run --filter status=exited)
if [ -n "$LEFT" ]; then
  echo "[execgate setup] removing $(echo "$LEFT" | wc -l) exited execgate container(s) left by an earlier run"
  echo "$LEFT" | xargs $SUDO env CONTAINERS_CONF="$CONTAINERS_CONF" podman rm -f >/dev/null
fi
echo "[execgate setup] podman $(podman --version | cut -d' ' -f3) serving the Docker API on $SOCKET; image $IMAGE ready"
