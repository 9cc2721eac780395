// SPDX-License-Identifier: BSD-3-Clause
// NDR/PDR search over rate (dpumesh/replay/search.h).
#include "dpumesh/replay/search.h"

#include <algorithm>
#include <cmath>

namespace dpumesh::replay {

search_result search(const search_config &c, double threshold, const trial_fn &trial,
		     double known_lower)
{
	search_result r;
	double last_rx = 0;
	auto run = [&](double rate, double seconds, bool final) {
		trial_outcome o = trial(rate, seconds, final);
		if (o.abort)
			r.aborted = true;
		search_step s{rate, seconds, o.loss_ratio, o.rx_rate,
			      o.ok && o.loss_ratio <= threshold + 1e-12, final};
		r.steps.push_back(s);
		last_rx = o.rx_rate;
		return s.pass;
	};
	const double floor = std::max(c.min_rate, 1.0);
	double lo = std::max(known_lower, floor); /* believed to pass, verified at the end */
	double hi = 0;                            /* lowest failing rate, 0 = none yet */
	double max_rate = std::max(c.max_rate, floor);
	bool use_rx = false;
	double seconds = c.trial_seconds;

	if (known_lower < max_rate && !run(max_rate, c.trial_seconds, false)) {
		if (r.aborted)
			return r;
		hi = max_rate;
		use_rx = true;
	} else {
		lo = std::max(lo, max_rate);
	}
	for (unsigned retries = 0;;) {
		while (hi > 0 && (hi - lo) / hi > c.precision && r.steps.size() < c.max_trials &&
		       !r.aborted) {
			/* bisect in log space while the bracket spans more than 4x (a 1k..2M bracket
			 * would take many arithmetic halvings), linearly after */
			double rate = hi > 4 * lo ? std::sqrt(lo * hi) : (lo + hi) / 2;
			if (use_rx && last_rx > lo && last_rx < hi)
				rate = last_rx; /* what the device managed at the failing rate */
			use_rx = false;
			if (run(rate, seconds, false))
				lo = rate;
			else
				hi = rate;
		}
		if (r.aborted || r.steps.size() >= c.max_trials + c.max_retries)
			break;
		if (run(lo, c.final_seconds, true) && !r.aborted) {
			r.rate = lo;
			r.verified = true;
			break;
		}
		hi = lo;
		if (r.aborted || ++retries > c.max_retries || lo <= floor)
			break;
		lo = std::max(known_lower > 0 && known_lower < hi ? known_lower : floor, floor);
		if (lo >= hi)
			lo = floor;
		use_rx = true;
		/* short trials overestimated the device: search on with verification-length ones */
		seconds = c.final_seconds;
	}
	r.upper = hi;
	return r;
}

} // namespace dpumesh::replay
