// SPDX-License-Identifier: BSD-3-Clause
// Throughput search: the highest rate with no loss (NDR) or with a small loss (PDR).
//
// As RFC 2544 §26.1 and FD.io CSIT's MLRsearch do it, in three phases:
//   1. a trial at max_rate; if it passes, that is the answer;
//   2. otherwise the next upper bound is the rate the device forwarded in that trial (what
//      came back: MLRsearch's "receive rate" step), then binary search between a passing
//      lower bound and a failing upper bound (geometric midpoint while upper > 4 x lower)
//      until (upper - lower) / upper <= precision, with short trials (trial_seconds);
//   3. a verification trial of final_seconds at the lower bound; if it fails, the bound
//      becomes the upper bound and the search goes on below it, from the rate the device
//      returned in that trial and with trials of final_seconds from then on (short trials
//      overestimated it), at most max_retries times.
// A trial passes when its loss ratio is <= the threshold (0 for NDR). A PDR search reuses
// the NDR as its starting lower bound (PDR >= NDR). The trial itself is a callback, so the
// logic is tested without a device and the same search drives any generator.
//
//   auto ndr = replay::search(cfg, 0.0, [&](double pps, double s) { return run(pps, s); });
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dpumesh::replay {

/** What the search needs to know about one trial. */
struct trial_outcome {
	double loss_ratio = 0; /**< lost / expected */
	double rx_rate = 0;    /**< answers per second the device returned */
	bool ok = true;        /**< false: the generator could not offer the rate (not the DUT's fault) */
	bool abort = false;    /**< stop searching (interrupted, or the port took nothing) */
};

struct search_config {
	double min_rate = 1000;      /**< pps; assumed to pass, checked when reached */
	double max_rate = 1e6;       /**< pps; the first trial */
	double trial_seconds = 1.0;  /**< binary search trials */
	double final_seconds = 5.0;  /**< the verification trial */
	double precision = 0.05;     /**< stop when (upper - lower) / upper <= this */
	unsigned max_trials = 30;    /**< a hard bound on the number of trials */
	unsigned max_retries = 3;    /**< failed verifications before giving up */
};

struct search_step {
	double rate = 0, seconds = 0, loss_ratio = 0, rx_rate = 0;
	bool pass = false, final = false;
};

struct search_result {
	double rate = 0;        /**< the found rate (the last passing verified bound), 0 if none */
	double upper = 0;       /**< the lowest failing rate seen (0 if none failed) */
	bool verified = false;  /**< a final_seconds trial passed at `rate` */
	bool aborted = false;   /**< a trial asked to stop */
	std::vector<search_step> steps;
};

/** Runs one trial of `seconds` at `rate`; `verification` marks the final trials. */
using trial_fn = std::function<trial_outcome(double rate, double seconds, bool verification)>;

/** Runs the search for loss threshold `threshold` (0 = NDR, 0.005 = PDR at 0.5%). */
search_result search(const search_config &c, double threshold, const trial_fn &trial,
		     double known_lower = 0);

} // namespace dpumesh::replay
