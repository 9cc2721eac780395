# SPDX-License-Identifier: BSD-3-Clause
# The soak's test for a quantity that grows without bound (a leak), shared by soak_check.py
# and its unit test (tests/unit/check_soak_growth.py).
#
# A leak raises the floor: what is lost is never back, so every sample after it carries it.
# The peaks of a gauge sampled every 5 s say little: a gauge of buffers in use (the DPA's
# header buffers under Case 2 overload with retries held) reads 50-150 most of the time and,
# in one sample now and then, 800-2300, in whichever quarter a burst happens to be caught.
# So each quarter is judged by its lower quartile: the quantity grows when the last quarter's
# is above the second quarter's by 10% and a margin (the first quarter is the warm-up).


def lower_quartile(v):
    """The 25th percentile of v (nearest rank), 0 for none."""
    if not v:
        return 0
    s = sorted(v)
    return s[(len(s) - 1) // 4]


def grows(v, slack):
    """(grows, early, late): whether the samples v grow without bound, with the lower
    quartiles of the 2nd and the last quarter it was judged on."""
    q = len(v) // 4
    early, late = lower_quartile(v[q:2 * q]), lower_quartile(v[3 * q:])
    return late > early * 1.10 + slack, early, late
