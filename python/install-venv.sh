#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs this build's libdpumesh (cmake --install) into DEST/prefix and the dpumesh Python
# package into a venv DEST/venv (offline: pip --no-index; system site packages for pytest).
# Usage: python/install-venv.sh BINARY_DIR DEST      (then DEST/venv/bin/python)
set -euo pipefail
bin=$1 dest=$2
src=$(cd "$(dirname "$0")" && pwd)
cmake --install "$bin" --prefix "$dest/prefix" > "$dest/install.log"
/usr/bin/python3 -m venv --system-site-packages "$dest/venv"
PKG_CONFIG_PATH="$dest/prefix/lib/pkgconfig" "$dest/venv/bin/pip" install -q --no-index \
  --no-cache-dir "$src"
