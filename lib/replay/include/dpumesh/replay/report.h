// SPDX-License-Identifier: BSD-3-Clause
// The generator's outputs: a CSV row and a JSON object per trial, and a one-screen summary.
//
// Columns (CSV) and keys (JSON) are the same and documented in docs/benchmarks.md:
// label, phase, target, kind, seconds, tx_frames, tx_pps, tx_gbps, expected, answered, lost,
// loss_ratio, duplicates, stale, rx_other, untracked, tx_full, answers_2xx/4xx/5xx,
// mesh_errors, lat_min/p50/p90/p99/p999/max_us.
#pragma once

#include <cstdio>
#include <string>

#include "dpumesh/replay/generator.h"

namespace dpumesh::replay {

std::string csv_header();
/** One row; phase says why the trial ran (fixed, ndr, pdr, final, latency). */
std::string csv_row(const std::string &label, const std::string &phase, const trial_result &r);
std::string json_trial(const std::string &label, const std::string &phase, const trial_result &r);
/** A few lines a person reads at a glance. */
void print_trial(FILE *out, const std::string &label, const std::string &phase,
		 const trial_result &r);

} // namespace dpumesh::replay
