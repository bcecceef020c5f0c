#!/usr/bin/env bash
# The docker adapter's engine for tests: podman serving the Docker Engine API on a unix socket, and a sandbox image
# with python3, node and the data Python built from Debian packages with debootstrap (no registry needed), cached between runs.
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
  # setsid: its own session and process group, so the service outlives the test run that started it (a CI runner or a
  # person ending that run's process group must not take down the engine other runs on the machine use).
  (cd / || exit 1; setsid nohup $SUDO env CONTAINERS_CONF="$CONTAINERS_CONF" podman system service --time=0 "unix://$SOCKET" </dev/null >/tmp/execgate-podman-service.log 2>&1 &)
  for _ in $(seq 50); do curl -sf --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1 && break; sleep 0.2; done
  curl -sf --unix-socket "$SOCKET" http://d/_ping >/dev/null || { echo "[execgate setup] podman service did not start; see /tmp/execgate-podman-service.log" >&2; exit 1; }
fi

# The image: debootstrap a minimal Debian with python3, nodejs and the data Python (numpy, pandas, scipy, matplotlib,
# scikit-learn, openpyxl from Debian's packages), import it. Built once per machine; an image from before the data
# Python (without the io.execgate.data label) is rebuilt. The new image is imported under a temporary tag and only
# then tagged as $IMAGE, so a failed build leaves the old image in place and a run in progress keeps its own.
DATA_LABEL=io.execgate.data=numpy,pandas,scipy,matplotlib,sklearn,openpyxl
PODMAN=($SUDO env CONTAINERS_CONF="$CONTAINERS_CONF" podman)
has_data_image() {
  "${PODMAN[@]}" image exists "$IMAGE" && [ "$("${PODMAN[@]}" image inspect --format '{{index .Config.Labels "io.execgate.data"}}' "$IMAGE" 2>/dev/null)" = "${DATA_LABEL#*=}" ]
}
if ! has_data_image; then
  ROOTFS=$(mktemp -d /var/tmp/execgate-rootfs.XXXXXX)
  MIRROR=${EXECGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  INCLUDE=python3-minimal,libpython3-stdlib,nodejs,python3-numpy,python3-pandas,python3-scipy,python3-matplotlib,python3-sklearn,python3-openpyxl
  echo "[execgate setup] building $IMAGE with debootstrap from $MIRROR (a few minutes, once)"
  built=
  for attempt in 1 2 3; do
    # A mirror hiccup fails one download: start again from a clean directory.
    if $SUDO debootstrap --variant=minbase --include="$INCLUDE" bookworm "$ROOTFS" "$MIRROR" >/tmp/execgate-debootstrap.log 2>&1; then built=1; break; fi
    echo "[execgate setup] debootstrap attempt $attempt failed; see /tmp/execgate-debootstrap.log" >&2
    $SUDO rm -rf "$ROOTFS"; ROOTFS=$(mktemp -d /var/tmp/execgate-rootfs.XXXXXX)
  done
  [ -n "$built" ] || { $SUDO rm -rf "$ROOTFS"; echo "[execgate setup] debootstrap failed; see /tmp/execgate-debootstrap.log" >&2; exit 1; }
  # The image proves it before it is used: every data package imports, off-screen.
  $SUDO chroot "$ROOTFS" /usr/bin/env MPLBACKEND=Agg MPLCONFIGDIR=/tmp/mpl /usr/bin/python3 -c 'import numpy, pandas, scipy, matplotlib.pyplot, sklearn, openpyxl' \
    || { $SUDO rm -rf "$ROOTFS"; echo "[execgate setup] the data Python in the image does not import" >&2; exit 1; }
  $SUDO rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/tmp/mpl
  STAGING="$IMAGE-staging-$$"
  $SUDO tar -C "$ROOTFS" -c . | "${PODMAN[@]}" import --change 'CMD ["/bin/sh"]' --change "LABEL $DATA_LABEL" - "$STAGING" >/dev/null
  "${PODMAN[@]}" tag "$STAGING" "$IMAGE"
  # untag with the name given: without one, podman removes every name of the image, $IMAGE's too.
  "${PODMAN[@]}" untag "$STAGING" "$STAGING" >/dev/null 2>&1 || true
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
