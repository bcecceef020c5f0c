#!/usr/bin/env bash
# The data Python of the process tier: numpy, pandas, scipy, matplotlib, scikit-learn and openpyxl from Debian's
# packages, for the OS's /usr/bin/python3 (the interpreter the process adapter runs under bubblewrap). Idempotent:
# nothing is installed when every module already imports.
set -euo pipefail
PYTHON=${EXECGATE_ADAPTERS_PROCESS_PYTHON_PATH:-/usr/bin/python3}
PACKAGES=(python3-numpy python3-pandas python3-scipy python3-matplotlib python3-sklearn python3-openpyxl)
MODULES="numpy, pandas, scipy, matplotlib, sklearn, openpyxl"
if ! "$PYTHON" -c "import $MODULES" >/dev/null 2>&1; then
  echo "[execgate setup] installing the data Python: ${PACKAGES[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
fi
"$PYTHON" -c "import $MODULES" || { echo "[execgate setup] the data Python does not import ($MODULES) with $PYTHON" >&2; exit 1; }
echo "[execgate setup] data Python ready: $("$PYTHON" -c 'import numpy, pandas, matplotlib; print("numpy", numpy.__version__, "pandas", pandas.__version__, "matplotlib", matplotlib.__version__)')"
