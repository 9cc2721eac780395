#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: installs what is missing, builds dpumesh, generates a sample mesh capture and
# runs a node on the embedded default config (conf/default.json), replaying the capture
# through a net_pcap port and printing live statistics until Ctrl-C.
#
#   scripts/run.sh                       # defaults
#   scripts/run.sh --stats-period 5      # extra arguments go to dpumesh (after --)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_BUILD_DIR:-$root/build}

bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPUMESH_TESTS=OFF
cmake --build "$build" -j "$(nproc)"

# net_pcap with infinite_rx=1 holds the whole capture in mbufs: keep it well under
# /mempool/mbufs (8191 in conf/default.json).
capture="$build/sample.pcap"
"$build/bin/dpumesh-pcapgen" --out "$capture" --messages 2000 --services frontend,echo \
  --body 0:8192 --ipv6-share 0.25 --malformed-share 0.01 --other-share 0.02 --seed 1

exec "$build/bin/dpumesh" -l 0-1 --no-huge -m 512 --no-pci --no-shconf --file-prefix "dpumesh-run-$$" \
  --vdev "net_pcap0,rx_pcap=$capture,infinite_rx=1" -- --stats-period 1 "$@"
