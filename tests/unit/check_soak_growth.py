#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The soak's leak test (perf/lib/soak_growth.py): a leak is caught, with or without a
# gauge's spikes beside it; spikes alone, in any quarter, are not a leak.
#   check_soak_growth.py PERF_LIB_DIR
import random
import sys

sys.path.insert(0, sys.argv[1])
import soak_growth  # noqa: E402

failures = []


def expect(what, got, want):
    if got != want:
        failures.append("%s: grows=%s, expected %s" % (what, got, want))


rng = random.Random(7)
n = 180  # a 900 s soak sampled every 5 s
base = [rng.randint(40, 160) for _ in range(n)]

# the DPA's header buffers of the two-worker soak of 2026-12-06: a sample in 2300 caught in
# a burst, the highest in the last quarter (the peak rule called it a leak)
spiky = list(base)
for i, peak in ((42, 879), (68, 1763), (130, 810), (139, 2250), (176, 1770)):
    spiky[i] = peak
expect("spikes, the highest late", soak_growth.grows(spiky, 256)[0], False)

# a leak of 1000 buffers over the run, alone and under the same spikes
leak = [b + i * 1000 // n for i, b in enumerate(base)]
expect("a leak", soak_growth.grows(leak, 256)[0], True)
expect("a leak under spikes", soak_growth.grows([max(a, b) for a, b in zip(leak, spiky)], 256)[0],
       True)

# a leak that starts after the second quarter
late = [b + (600 if i >= 3 * n // 4 else 0) for i, b in enumerate(base)]
expect("a late leak", soak_growth.grows(late, 256)[0], True)

# RSS (KiB): flat with its occasional +60 MiB, and growing 200 MiB over the run
rss = [380000 + rng.randint(-4000, 4000) for _ in range(n)]
rss_spiky = [r + (61440 if i % 37 == 36 else 0) for i, r in enumerate(rss)]
expect("RSS with spikes", soak_growth.grows(rss_spiky, 16384)[0], False)
expect("RSS growing", soak_growth.grows([r + i * 204800 // n for i, r in enumerate(rss)], 16384)[0],
       True)

# a warm-up in the first quarter is not growth; too few samples are not either
warm = [0] * (n // 4) + base[n // 4:]
expect("warm-up", soak_growth.grows(warm, 256)[0], False)
expect("no samples", soak_growth.grows([], 256)[0], False)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: the soak's growth test")
