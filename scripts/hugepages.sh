#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Optional: reserves 2 MiB hugepages and mounts hugetlbfs, for runs without --no-huge.
# Never required: every dpumesh command and test works with --no-huge.
#
#   scripts/hugepages.sh 1024        # reserve 1024 x 2 MiB (2 GiB)
#   scripts/hugepages.sh 0           # give them back
set -euo pipefail
pages=${1:-512}
if ! [[ "$pages" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [number of 2 MiB pages]" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then echo "hugepages.sh: needs root" >&2; exit 1; fi
if command -v dpdk-hugepages.py >/dev/null; then
  if [ "$pages" -eq 0 ]; then
    dpdk-hugepages.py --clear
    dpdk-hugepages.py --unmount || true
  else
    dpdk-hugepages.py --pagesize 2M --reserve "$((pages * 2))M" --setup "$((pages * 2))M"
    # --setup leaves an existing, unmounted /dev/hugepages alone: EAL needs it mounted
    mkdir -p /dev/hugepages
    mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
  fi
  dpdk-hugepages.py --show
else
  echo "$pages" > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  mkdir -p /dev/hugepages
  mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
  grep -i huge /proc/meminfo
fi
