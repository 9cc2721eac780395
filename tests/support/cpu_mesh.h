// SPDX-License-Identifier: BSD-3-Clause
// The DPU side for pod tests, in the test process: registry, control server (registrar) and a
// single-threaded data mover that copies with the CPU through the security core (take_tx,
// take_rx_slots, deliver, complete_tx), keeps the pending-request table, and fails requests
// back with DEST_GONE when their destination dies.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/podreg/registrar.h"
#include "dpumesh/wire/l7.h"
#include "subprocess.h"

namespace dpumesh::test {

using namespace std::chrono_literals;

/* The DPU side: registry, control server, and a single-threaded CPU-copy data mover. */
class cpu_mesh {
public:
	cpu_mesh(const std::string &sock, std::vector<config::service_config> svcs)
		: reg(config::pools_config{}, std::move(svcs)), srv(reg)
	{
		EXPECT_TRUE(srv.listen(sock).is_ok());
	}

	/* One round: control, every TX SQ, retries, pending requests of dead pods. */
	unsigned step(bool move_tx = true)
	{
		unsigned n = srv.poll();
		if (!move_tx)
			return n;
		std::vector<tx_item> again;
		again.swap(deferred);
		for (const tx_item &it : again)
			if (reg.handle_live(it.src)) /* a dead sender's pointers are gone with it */
				route(it);
		for (uint32_t id = 0; id < DPUMESH_MAX_PODS; id++) {
			for (uint32_t q = 0; q < reg.nb_tx_sqs(id); q++) {
				tx_item it;
				for (int k = 0; k < 32; k++) {
					take_rc rc = reg.take_tx(id, q, &it);
					if (rc == take_rc::refused) {
						n++;
						continue;
					}
					if (rc != take_rc::ok)
						break;
					n++;
					route(it);
				}
			}
		}
		for (auto it = pending.begin(); it != pending.end();) {
			if (!reg.handle_live(std::get<0>(it->first))) {
				/* The destination died: fail the request back as a mesh error. */
				sw_descriptor e = {};
				e.req_id = std::get<1>(it->first);
				e.step_id = std::get<2>(it->first);
				e.flags = DPUMESH_OP_RESPONSE | DPUMESH_OP_ERROR | DPUMESH_CASE_LOCAL |
					  (DPUMESH_STATUS_DEST_GONE << DPUMESH_STATUS_SHIFT);
				if (reg.deliver(it->second, e) == DPUMESH_STATUS_DEST_FULL) {
					++it;
					continue;
				}
				failed_back++;
				it = pending.erase(it);
			} else
				++it;
		}
		for (size_t i = 0; i < retry.size();) {
			auto [h, d, st] = retry[i];
			if (reg.complete_tx(h, d, st) != DPUMESH_STATUS_DEST_FULL)
				retry.erase(retry.begin() + static_cast<std::ptrdiff_t>(i));
			else
				i++;
		}
		return n;
	}

	void complete(uint32_t h, const sw_descriptor &d, uint32_t st)
	{
		if (st != DPUMESH_STATUS_OK)
			refused_by_harness++;
		if (reg.complete_tx(h, d, st) == DPUMESH_STATUS_DEST_FULL)
			retry.emplace_back(h, d, st);
	}

	void route(const tx_item &it)
	{
		const sw_descriptor &d = it.desc;
		wire::l7_view v;
		if (wire::l7_decode(it.header, d.header_len, &v) != wire::l7_error::ok) {
			complete(it.src, d, DPUMESH_STATUS_BAD_DESCRIPTOR);
			return;
		}
		uint32_t dst = 0;
		const bool is_request = (d.flags & DPUMESH_OP_MASK) == DPUMESH_OP_REQUEST;
		auto key = std::make_tuple(it.src, d.req_id, d.step_id);
		if (is_request) {
			dst = reg.pick_pod(reg.service_index(v.service));
			if (dst == 0) {
				requests_refused++;
				complete(it.src, d, DPUMESH_STATUS_NO_POD);
				return;
			}
		} else {
			auto p = pending.find(key); /* identity from the SQ, never from d.dst */
			if (p == pending.end()) {
				no_match++;
				complete(it.src, d, DPUMESH_STATUS_NO_MATCH);
				return;
			}
			dst = p->second;
		}
		rx_slots s;
		uint32_t st = reg.take_rx_slots(dst, d.header_len, d.body_len, &s);
		if (st == DPUMESH_STATUS_DEST_FULL) {
			deferred.push_back(it); /* destination busy: back-pressure, retry */
			return;
		}
		if (st != DPUMESH_STATUS_OK) {
			requests_refused += is_request;
			complete(it.src, d, st);
			return;
		}
		std::memcpy(s.header, it.header, d.header_len);
		if (d.body_len)
			std::memcpy(s.body, it.body, d.body_len);
		sw_descriptor out = {};
		out.header_buf_addr = s.header_addr;
		out.header_len = d.header_len;
		out.body_buf_addr = s.body_addr;
		out.body_len = d.body_len;
		out.req_id = d.req_id;
		out.step_id = d.step_id;
		out.flags = (d.flags & DPUMESH_OP_MASK) | DPUMESH_CASE_LOCAL;
		out.dst.pod_id = dst;
		st = reg.deliver(dst, out);
		if (st != DPUMESH_STATUS_OK) {
			reg.return_rx_slots(dst, s);
			if (st == DPUMESH_STATUS_DEST_FULL) {
				deferred.push_back(it);
				return;
			}
			requests_refused += is_request;
			complete(it.src, d, st);
			return;
		}
		delivered++;
		requests_delivered += is_request;
		if (is_request)
			pending[std::make_tuple(dst, d.req_id, d.step_id)] = it.src;
		else
			pending.erase(pending.find(key));
		complete(it.src, d, DPUMESH_STATUS_OK);
	}

	/* Steps until pred() or the limit; sleeps a little when idle (2-core machine). */
	bool run_until(const std::function<bool()> &pred, std::chrono::milliseconds limit,
		       bool move_tx = true)
	{
		auto end = std::chrono::steady_clock::now() + limit;
		while (!pred()) {
			if (std::chrono::steady_clock::now() > end)
				return false;
			if (step(move_tx) == 0)
				std::this_thread::sleep_for(100us);
		}
		return true;
	}

	/* Waits for a line in a child's output while serving the mesh. */
	std::string wait_line(subprocess &p, const std::string &prefix, bool move_tx = true)
	{
		std::string line;
		run_until(
			[&] {
				const std::string &o = p.output();
				size_t at = o.find(prefix);
				if (at == std::string::npos)
					return false;
				size_t eol = o.find('\n', at);
				if (eol == std::string::npos)
					return false;
				line = o.substr(at, eol - at);
				return true;
			},
			20s, move_tx);
		return line;
	}

	pod_registry reg;
	registrar srv;
	std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> pending; /* dst,req,step -> src */
	std::vector<std::tuple<uint32_t, sw_descriptor, uint32_t>> retry;
	std::vector<tx_item> deferred;
	uint64_t requests_delivered = 0, requests_refused = 0;
	uint64_t delivered = 0, refused_by_harness = 0, no_match = 0, failed_back = 0;
};

} // namespace dpumesh::test
