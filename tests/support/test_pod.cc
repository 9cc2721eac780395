// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-test-pod: a pod for the policy tests, on the libdpumesh C API (dpumesh_wait loop).
//   server SOCK SERVICE STATUS      answer every request with STATUS and its body, plus
//                                   x-pod, x-got-request-id, x-got-traceparent fields
//                                   ($DPUMESH_TEST_DIE_AFTER_ANSWER: exit right after)
//   call SOCK SCRIPT                one request per script line, one at a time:
//                                   "SERVICE METHOD PATH AUTH [NAME=VALUE]" (AUTH "-": none)
//                                   prints "R <line> <status> <reason> <hop> pod=.. rid=.. tp=.."
//   loop SOCK SERVICE METHOD PATH SECONDS WINDOW
//                                   WINDOW requests outstanding for SECONDS; prints
//                                   "DONE sent=.. answered=.. refused=.. elapsed_ms=..
//                                   s<status>=.. runs=<status>x<count>,..."
// The caller registers as service "client". Prints "READY pod=<id>" once registered.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dpumesh/host/dpumesh.h"

namespace {

using clk = std::chrono::steady_clock;

dpumesh_t *open_pod(const char *sock, const char *service, dpumesh_callbacks cb, void *user)
{
	dpumesh_options o = {};
	o.socket_path = sock;
	o.service = service;
	o.nb_workers = 1;
	o.geometry = dpumesh_geometry{{64, 1024}, {64, 4096}, {64, 1024}, {64, 4096}, 256, 0};
	o.callbacks = cb;
	o.user = user;
	dpumesh_t *h = nullptr;
	char err[256];
	if (int rc = dpumesh_open(&o, &h, err, sizeof(err)); rc != 0) {
		std::printf("OPEN FAILED rc=%d %s\n", rc, err);
		std::exit(2);
	}
	std::printf("READY pod=%u\n", dpumesh_pod_id(h));
	std::fflush(stdout);
	return h;
}



std::string field(const dpumesh_msg *m, const char *name)
{
	const char *v;
	size_t len;
	if (dpumesh_msg_field(m, name, &v, &len) != 0)
		return "-";
	return std::string(v, len);
}

/* ---- server ---- */

struct server_state {
	uint16_t status;
	std::vector<dpumesh_msg *> backlog;
};

bool answer(dpumesh_t *h, dpumesh_msg *m, server_state *s)
{
	std::string pod = std::to_string(dpumesh_pod_id(h));
	std::string rid = field(m, "x-request-id"), tp = field(m, "traceparent");
	dpumesh_field f[3] = {{"x-pod", pod.c_str()},
			      {"x-got-request-id", rid.c_str()},
			      {"x-got-traceparent", tp.c_str()}};
	int rc = dpumesh_send_response(h, 0, m, s->status, f, 3, m->body, m->body_len);
	if (rc == -EAGAIN || rc == -ENOBUFS)
		return false;
	/* $DPUMESH_TEST_DIE_AFTER_ANSWER: exit the moment the answer is posted, so the DPU
	 * may find its body gone (the responder-dies-mid-answer test) */
	static const bool die = std::getenv("DPUMESH_TEST_DIE_AFTER_ANSWER") != nullptr;
	if (die)
		_exit(0);
	dpumesh_msg_release(h, m);
	return true;
}

int run_server(const char *sock, const char *service, uint16_t status)
{
	server_state st{status, {}};
	dpumesh_callbacks cb = {};
	cb.on_request = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		auto *s = static_cast<server_state *>(u);
		if (!s->backlog.empty() || !answer(h, m, s))
			s->backlog.push_back(m);
	};
	dpumesh_t *h = open_pod(sock, service, cb, &st);
	for (;;) {
		(void)dpumesh_wait(h, st.backlog.empty() ? -1 : 1);
		while (!st.backlog.empty() && answer(h, st.backlog.front(), &st))
			st.backlog.erase(st.backlog.begin());
	}
}

/* ---- callers ---- */

struct caller_state {
	/* call: the current line's answer */
	bool answered = false;
	std::string line;
	/* loop */
	uint64_t sent = 0, got = 0, refused = 0, outstanding = 0;
	std::map<uint16_t, uint64_t> by_status;
	std::vector<std::pair<uint16_t, uint64_t>> runs; /* statuses in answer order, RLE */
};

void on_answer(caller_state *s, const dpumesh_msg *m)
{
	uint16_t st = m->header_ok ? m->http_status : 0;
	s->got++;
	s->by_status[st]++;
	if (s->runs.empty() || s->runs.back().first != st)
		s->runs.push_back({st, 0});
	s->runs.back().second++;
	std::ostringstream o;
	o << st << " " << (m->reason_len ? std::string(m->reason, m->reason_len) : "-") << " "
	  << (m->hop_len ? std::string(m->hop, m->hop_len) : "-") << " pod=" << field(m, "x-pod")
	  << " rid=" << field(m, "x-got-request-id") << " tp=" << field(m, "x-got-traceparent");
	s->line = o.str();
	s->answered = true;
}

dpumesh_t *open_caller(const char *sock, caller_state *st)
{
	dpumesh_callbacks cb = {};
	cb.on_response = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		auto *s = static_cast<caller_state *>(u);
		on_answer(s, m);
		s->outstanding--;
		dpumesh_msg_release(h, m);
	};
	cb.on_tx_done = [](dpumesh_t *, uint32_t, uint32_t, uint32_t status, void *u) {
		auto *s = static_cast<caller_state *>(u);
		if (status != 0) {
			s->refused++;
			s->outstanding--;
			s->line = "REFUSED " + std::to_string(status);
			s->answered = true;
		}
	};
	return open_pod(sock, "client", cb, st);
}

/* Sends one request, waiting for room (try again) up to 5 s; false on failure. */
bool send(dpumesh_t *h, const dpumesh_request &r)
{
	const auto limit = clk::now() + std::chrono::seconds(5);
	for (;;) {
		int rc = dpumesh_send_request(h, 0, &r);
		if (rc == 0)
			return true;
		if ((rc != -EAGAIN && rc != -ENOBUFS) || clk::now() > limit)
			return false;
		(void)dpumesh_wait(h, 1);
	}
}

int run_call(const char *sock, const char *script)
{
	std::ifstream in(script);
	if (!in) {
		std::printf("cannot open %s\n", script);
		return 2;
	}
	caller_state st;
	dpumesh_t *h = open_caller(sock, &st);
	std::string text;
	unsigned n = 0;
	while (std::getline(in, text)) {
		std::istringstream ls(text);
		std::string service, method, path, auth, extra;
		if (!(ls >> service >> method >> path >> auth))
			continue;
		ls >> extra;
		std::replace(auth.begin(), auth.end(), '~', ' '); /* "Bearer~<token>" */
		std::string ename, evalue; /* outlive the send */
		std::vector<dpumesh_field> fields;
		if (auth != "-")
			fields.push_back({"authorization", auth.c_str()});
		if (size_t eq = extra.find('='); eq != std::string::npos) {
			ename = extra.substr(0, eq);
			evalue = extra.substr(eq + 1);
			fields.push_back({ename.c_str(), evalue.c_str()});
		}
		std::string body = "body-" + std::to_string(n);
		dpumesh_request r = {};
		r.service = service.c_str();
		r.method = method.c_str();
		r.path = path.c_str();
		r.fields = fields.data();
		r.nb_fields = static_cast<uint32_t>(fields.size());
		r.body = body.data();
		r.body_len = static_cast<uint32_t>(body.size());
		r.req_id = n;
		r.step_id = 1;
		st.answered = false;
		st.outstanding++;
		if (!send(h, r)) {
			std::printf("R %u SEND_FAILED\n", n);
			return 1;
		}
		const auto limit = clk::now() + std::chrono::seconds(10);
		while (!st.answered && clk::now() < limit)
			(void)dpumesh_wait(h, 10);
		std::printf("R %u %s\n", n, st.answered ? st.line.c_str() : "NO_ANSWER");
		std::fflush(stdout);
		n++;
	}
	std::printf("DONE n=%u\n", n);
	dpumesh_close(h);
	return 0;
}

int run_loop(const char *sock, const char *service, const char *method, const char *path,
	     double seconds, unsigned window)
{
	caller_state st;
	dpumesh_t *h = open_caller(sock, &st);
	dpumesh_request r = {};
	r.service = service;
	r.method = method;
	r.path = path;
	r.step_id = 1;
	const auto t0 = clk::now();
	const auto end = t0 + std::chrono::duration_cast<clk::duration>(
				       std::chrono::duration<double>(seconds));
	while (clk::now() < end) {
		while (st.outstanding < window && clk::now() < end) {
			r.req_id = static_cast<uint32_t>(st.sent);
			if (dpumesh_send_request(h, 0, &r) != 0)
				break;
			st.sent++;
			st.outstanding++;
		}
		(void)dpumesh_wait(h, 1);
	}
	const auto elapsed = clk::now() - t0;
	/* the answers still on their way */
	const auto limit = clk::now() + std::chrono::seconds(10);
	while (st.outstanding > 0 && clk::now() < limit)
		(void)dpumesh_wait(h, 10);
	std::printf("DONE sent=%llu answered=%llu refused=%llu elapsed_ms=%lld",
		    static_cast<unsigned long long>(st.sent), static_cast<unsigned long long>(st.got),
		    static_cast<unsigned long long>(st.refused),
		    static_cast<long long>(
			    std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
	for (const auto &[status, count] : st.by_status)
		std::printf(" s%u=%llu", status, static_cast<unsigned long long>(count));
	std::string runs;
	for (const auto &[status, count] : st.runs)
		runs += (runs.empty() ? "" : ",") + std::to_string(status) + "x" + std::to_string(count);
	std::printf(" runs=%s\n", runs.c_str());
	dpumesh_close(h);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::string mode = argc > 1 ? argv[1] : "";
	if (mode == "server" && argc == 5)
		return run_server(argv[2], argv[3], static_cast<uint16_t>(std::atoi(argv[4])));
	if (mode == "call" && argc == 4)
		return run_call(argv[2], argv[3]);
	if (mode == "loop" && argc == 8)
		return run_loop(argv[2], argv[3], argv[4], argv[5], std::atof(argv[6]),
				static_cast<unsigned>(std::atoi(argv[7])));
	std::fprintf(stderr,
		     "usage: dpumesh-test-pod server SOCK SERVICE STATUS | call SOCK SCRIPT |\n"
		     "       loop SOCK SERVICE METHOD PATH SECONDS WINDOW\n");
	return 2;
}
