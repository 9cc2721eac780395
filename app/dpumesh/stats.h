// SPDX-License-Identifier: BSD-3-Clause
// Periodic and final statistics of the dpumesh application.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "dpumesh/lcore/runner.h"
#include "dpumesh/port/port.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/port/tx.h"
#include "dpumesh/sidecar/sidecar.h"

namespace dpumesh::app {

/** What the stats printer reads; owned by main. */
struct node_view {
	const std::vector<port::port_info> *ports;
	const std::vector<port::rx_ctx *> *rx;
	const lcore::runner *runner;
	const sidecar::stage *sidecar = nullptr;
	const dpa::emulator *emu = nullptr;
	const pod_registry *registry = nullptr;
	const std::vector<port::tx_ctx *> *tx = nullptr;
};

class stats_printer {
public:
	explicit stats_printer(node_view v);
	/** One block of rates since the previous call. */
	void print_periodic(FILE *out);
	/** key=value lines with totals, read by tests and scripts. */
	void print_final(FILE *out);
	/** Pods, sidecar and DPA threads: a summary line each, or final key=value lines. */
	void print_mesh(FILE *out, bool final) const;

private:
	struct port_prev {
		uint64_t ipackets = 0, ibytes = 0, opackets = 0, obytes = 0;
	};
	node_view _v;
	std::vector<port_prev> _prev;
	uint64_t _prev_tsc;
	uint64_t _start_tsc;
};

} // namespace dpumesh::app
