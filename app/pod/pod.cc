// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-pod: the sample pod program, on the libdpumesh C API with a dpumesh_wait loop. It
// is the README's sample service and the pod of the integration tests. Modes:
//   echo   SOCK                      answer every request with its body and an x-sum field
//                                    (status 200, or the request's x-echo-status)
//   client SOCK N SEED MAXBODY [FLOOD]  send N requests (random bodies), at most 32 (or
//                                    $DPUMESH_CLIENT_WINDOW) outstanding, check the echoes;
//                                    FLOOD: first send without progressing until try-again
//   evil   SOCK VICTIM_TXH VICTIM_RXB  post malicious descriptors, report the refusals
//   sink   SOCK                      register as "echo", take requests, never answer
//   hog    SOCK                      as sink, and never release them (RX slots run out)
//   flood  SOCK                      a hostile client: posts requests to echo without limit,
//                                    all from one TX header slot (raw descriptors), drains
//                                    its TX completions, never releases what it receives
//   nodrain SOCK                     a client that sends as fast as the API lets it and never
//                                    releases its answers (its RX slots run out)
// Prints "READY pod=<id> gen=<g>" once registered and "DONE ..." at the end; a pod whose
// node closes its channel (stops or dies) prints "NODE LOST" and exits 3, whatever its mode.
// $DPUMESH_POD_SERVICE: the service echo registers as; $DPUMESH_CLIENT_SERVICE: the service
// client calls (both "echo" by default; a comma list: requests go round robin).
// Benchmark options (perf/, docs/benchmarks.md), all environment variables:
//   DPUMESH_POD_GEOMETRY=default|small  the library's default pools (footprint), or a small
//                                    geometry for many pods (scaling); else the test geometry
//   DPUMESH_POD_BODY_SLOTS=N         body slots of each body pool (test geometry)
//   DPUMESH_POD_RX_BODY_SLOTS=N      body slots of the RX body pool alone (after the above)
//   DPUMESH_CLIENT_SECONDS=S         client: stop sending after S seconds (N is a cap)
//   DPUMESH_CLIENT_WARMUP=S          client: answers in the first S seconds are not measured
//   DPUMESH_CLIENT_STALL=S           client: no answer for S seconds with requests outstanding:
//                                    print "STALL ..." (which requests) and exit 4
//   DPUMESH_CLIENT_RATE=R            client: send at most R requests a second (an offered
//                                    load, paced from the start; the window still applies)
//   DPUMESH_CLIENT_PAUSE_AT=N, DPUMESH_CLIENT_PAUSE_MS=MS
//                                    client: once N requests were sent and its window is
//                                    full, take nothing (no progress, RX not drained) for
//                                    MS ms, once
// Every request carries x-ts (the client's send time, ns, CLOCK_MONOTONIC) and echo returns
// it: the client's round-trip times come from the answer itself.
#include <signal.h>
#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "dpumesh/host/dpumesh.h"
#include "dpumesh/common/fnv.h"
#include "dpumesh/common/numbers.h"
#include "dpumesh/wire/l7.h"

namespace {

/* Numbers from the command line and the environment: the whole text one number in range, or
 * exit 64 (usage) naming it. strtoul()/strtod() alone read "abc" as 0 and "8k" as 8, which
 * ran another test than the one asked for. An empty variable is an unset one. */
uint64_t whole(const char *what, const char *s, uint64_t lo, uint64_t hi)
{
	return dpumesh::whole_arg("dpumesh-pod", what, s, lo, hi, 64, 0);
}

double real(const char *what, const char *s, double lo, double hi)
{
	return dpumesh::real_arg("dpumesh-pod", what, s, lo, hi, 64);
}

uint64_t env_whole(const char *var, uint64_t def, uint64_t lo, uint64_t hi)
{
	const char *e = std::getenv(var);
	return e && *e ? whole(var, e, lo, hi) : def;
}

/* The service a pod registers as (echo) or calls (client): "echo" unless $var names one. */
const char *service_name(const char *var)
{
	const char *e = std::getenv(var);
	return e && *e ? e : "echo";
}

/* Body slots are 8 KiB unless DPUMESH_TEST_BODY_SLOT says otherwise (then fewer slots, so a
 * 1 MiB geometry stays small: memfd pages are only allocated when touched).
 * DPUMESH_POD_BODY_SLOTS overrides the body slot count; DPUMESH_POD_GEOMETRY=default takes
 * the library's default (the node's default pools), =small a geometry for many pods. */
dpumesh_geometry test_geometry(uint32_t tx_header_slots)
{
	const char *g = std::getenv("DPUMESH_POD_GEOMETRY");
	if (g && std::strcmp(g, "default") == 0)
		return dpumesh_default_geometry();
	if (g && std::strcmp(g, "small") == 0)
		return dpumesh_geometry{{64, 512}, {64, 1024}, {64, 512}, {64, 1024}, 256, 0};
	uint32_t body = 8192, rx_body_slots = 64, tx_body_slots = tx_header_slots;
	body = static_cast<uint32_t>(env_whole("DPUMESH_TEST_BODY_SLOT", body, 1, UINT32_MAX));
	if (body > 65536)
		rx_body_slots = tx_body_slots = 16;
	/* unset (0): the slots stay as they are */
	if (const auto n = static_cast<uint32_t>(env_whole("DPUMESH_POD_BODY_SLOTS", 0, 1, UINT32_MAX)))
		rx_body_slots = tx_body_slots = n;
	if (const auto n = static_cast<uint32_t>(env_whole("DPUMESH_POD_RX_BODY_SLOTS", 0, 1, UINT32_MAX)))
		rx_body_slots = n;
	/* SQ depth 256: an RX SQ carries deliveries and TX-dones, so it needs room for both.
	 * A client asked for more than 64 TX slots (the try-again test) gets a TX SQ of half
	 * that, so its SQ fills before its pools. */
	uint32_t depth = tx_header_slots > 64 ? tx_header_slots / 2 : 256;
	return dpumesh_geometry{{tx_header_slots, 1024}, {tx_body_slots, body},
				{64, 1024}, {rx_body_slots, body}, depth, 0};
}

/* Nanoseconds on CLOCK_MONOTONIC (steady_clock): the x-ts field. */
uint64_t now_ns()
{
	return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
					     std::chrono::steady_clock::now().time_since_epoch())
					     .count());
}

/* Seconds from an environment variable (0 when unset). */
double env_seconds(const char *var)
{
	const char *e = std::getenv(var);
	return e && *e ? real(var, e, 0, 1e9) : 0.0;
}

uint32_t fnv(const uint8_t *p, size_t n) { return dpumesh::fnv1a(p, n); }

uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Body of request i: size and bytes from (seed, i). */
/* Body of request i: size and bytes from (seed, i); exactly `max` bytes when
 * $DPUMESH_CLIENT_FIXED is set (benchmarks). */
/* Returns a reference to a buffer reused by the next call: use it at once. */
const std::vector<uint8_t> &body_for(uint64_t seed, uint32_t i, uint32_t max)
{
	static const bool fixed = std::getenv("DPUMESH_CLIENT_FIXED") != nullptr;
	static std::vector<uint8_t> b;
	if (fixed) {
		/* benchmarks: one body of exactly `max` bytes, built once, so the client measures
		 * the mesh and not its own byte generation */
		if (b.size() != max) {
			b.assign(max, 0);
			for (size_t k = 0; k < b.size(); k++)
				b[k] = static_cast<uint8_t>(k * 131 + seed);
		}
		return b;
	}
	uint64_t r = mix(seed * 1000003u + i);
	b.resize(r % (max + 1));
	for (size_t k = 0; k < b.size(); k++)
		b[k] = static_cast<uint8_t>(mix(r + k / 8) >> (8 * (k % 8)));
	return b;
}



dpumesh_t *open_pod(const char *sock, const char *service, dpumesh_callbacks cb, void *user,
		    uint32_t tx_header_slots = 64)
{
	dpumesh_options o = {};
	o.socket_path = sock;
	o.service = service;
	o.nb_workers = 1;
	o.geometry = test_geometry(tx_header_slots);
	o.callbacks = cb;
	o.user = user;
	dpumesh_t *h = nullptr;
	char err[256];
	int rc = dpumesh_open(&o, &h, err, sizeof(err));
	if (rc != 0) {
		std::printf("OPEN FAILED rc=%d %s\n", rc, err);
		std::exit(2);
	}
	uint64_t txh, rxb, len;
	dpumesh_pool_range(h, DPUMESH_POOL_TX_HEADER, &txh, &len);
	dpumesh_pool_range(h, DPUMESH_POOL_RX_BODY, &rxb, &len);
	std::printf("READY pod=%u gen=%u txh=0x%" PRIx64 " rxb=0x%" PRIx64 "\n", dpumesh_pod_id(h),
		    dpumesh_generation(h), txh, rxb);
	std::fflush(stdout);
	return h;
}

/* dpumesh_wait, and this pod's end once its node has gone (stopped or died): nothing more
 * will come and nothing outstanding will be answered, so it says so and exits 3 */
int wait_or_leave(dpumesh_t *h, int timeout_ms)
{
	const int rc = dpumesh_wait(h, timeout_ms);
	if (rc == -ENOTCONN) {
		std::printf("NODE LOST\n");
		std::fflush(stdout);
		std::_Exit(3);
	}
	return rc;
}

/* ---- echo ---- */
struct echo_state {
	std::deque<dpumesh_msg *> backlog; /* requests not answered yet (try again) */
	std::map<std::string, long long> last_seq; /* per client run (x-seq "RUN.N"): last N */
	/* runs followed at most: a run's name is the client's (any bytes, up to 16 KiB), and a
	 * map entry each for the life of the pod; past it a new run is answered "none" */
	static constexpr size_t max_runs = 4096;
	useconds_t delay_us = 0; /* $DPUMESH_ECHO_DELAY_US: a slow service (its RX slots fill) */
};

/* Answers with the body, its checksum, this pod's id, and whether the request's x-seq came
 * after the previous one (per-SQ order through the mesh). */
bool answer(dpumesh_t *h, dpumesh_msg *m, echo_state *s)
{
	/* $DPUMESH_POD_NOSUM (benchmarks): no checksum, so the echo costs what a real service
	 * that does not read its body costs */
	static const bool nosum = std::getenv("DPUMESH_POD_NOSUM") != nullptr;
	if (s->delay_us > 0)
		usleep(s->delay_us);
	char sum[16], pod[16];
	if (nosum)
		std::snprintf(sum, sizeof(sum), "-");
	else
		std::snprintf(sum, sizeof(sum), "%08x", fnv(m->body, m->body_len));
	std::snprintf(pod, sizeof(pod), "%u", dpumesh_pod_id(h));
	const char *v;
	size_t len;
	const char *order = "none";
	std::string run;
	long long seq = -1;
	if (dpumesh_msg_field(m, "x-seq", &v, &len) == 0) {
		std::string x(v, len);
		size_t dot = x.find('.');
		run = x.substr(0, dot);
		seq = dot == std::string::npos ? -1 : std::strtoll(x.c_str() + dot + 1, nullptr, 10);
		auto it = s->last_seq.find(run);
		if (it == s->last_seq.end() && s->last_seq.size() >= echo_state::max_runs)
			order = "none";
		else
			order = it == s->last_seq.end() || seq > it->second ? "ok" : "bad";
	}
	/* the client's send time goes back as it came (round trips from the message itself) */
	char ts[24] = "";
	if (dpumesh_msg_field(m, "x-ts", &v, &len) == 0 && len < sizeof(ts)) {
		std::memcpy(ts, v, len);
		ts[len] = 0;
	}
	/* x-echo-status: N (100-599) answers with that status (tests of what a pod may answer) */
	uint16_t status = 200;
	char want[8];
	if (dpumesh_msg_field(m, "x-echo-status", &v, &len) == 0 && len < sizeof(want)) {
		std::memcpy(want, v, len);
		want[len] = 0;
		status = static_cast<uint16_t>(dpumesh::parse_whole(want, 100, 599).value_or(200));
	}
	dpumesh_field f[4] = {{"x-sum", sum}, {"x-pod", pod}, {"x-order", order}, {"x-ts", ts}};
	int rc = dpumesh_send_response(h, 0, m, status, f, ts[0] ? 4 : 3, m->body, m->body_len);
	if (rc == -EAGAIN || rc == -ENOBUFS)
		return false;
	if (std::strcmp(order, "none") != 0)
		s->last_seq[run] = seq;
	dpumesh_msg_release(h, m);
	return true;
}

int run_echo(const char *sock)
{
	echo_state st;
	st.delay_us = static_cast<useconds_t>(env_whole("DPUMESH_ECHO_DELAY_US", 0, 0, 60'000'000));
	dpumesh_callbacks cb = {};
	cb.on_request = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		auto *s = static_cast<echo_state *>(u);
		if (!s->backlog.empty() || !answer(h, m, s))
			s->backlog.push_back(m);
	};
	dpumesh_t *h = open_pod(sock, service_name("DPUMESH_POD_SERVICE"), cb, &st);
	for (;;) {
		(void)wait_or_leave(h, st.backlog.empty() ? -1 : 1);
		while (!st.backlog.empty() && answer(h, st.backlog.front(), &st))
			st.backlog.pop_front();
	}
}

/* ---- sink / hog: an "echo" that never answers ---- */
/* sink releases every request (its RX slots come back); hog keeps them, so its RX slots run
 * out and the mesh sees a full destination. Both never answer: requests time out. */
int run_sink(const char *sock, bool hog)
{
	static std::vector<dpumesh_msg *> kept;
	static bool keep = hog;
	dpumesh_callbacks cb = {};
	cb.on_request = [](dpumesh_t *h, dpumesh_msg *m, void *) {
		if (keep)
			kept.push_back(m);
		else
			dpumesh_msg_release(h, m);
	};
	dpumesh_t *h = open_pod(sock, service_name("DPUMESH_POD_SERVICE"), cb, nullptr);
	for (;;)
		(void)wait_or_leave(h, -1);
}

/* ---- client ---- */
struct client_state {
	uint64_t seed;
	uint32_t max;
	uint32_t n;
	uint32_t ok = 0, refused = 0, mesh_err = 0, bad = 0, order_bad = 0;
	uint32_t answered = 0; /* requests with at least one answer (the window counts these) */
	uint32_t dup = 0;      /* answers to a request that had one already (also in bad) */
	uint32_t resp_order_bad = 0; /* answers from one pod not in the order it got them */
	std::map<std::string, uint32_t> last_id; /* x-pod -> req_id of its last good answer */
	std::vector<uint8_t> done; /* per req_id */
	std::map<std::string, uint32_t> per_pod;    /* x-pod of each good answer */
	std::map<std::string, uint32_t> mesh_reasons; /* :reason of mesh-made errors */
	std::vector<std::chrono::steady_clock::time_point> sent_at; /* per req_id */
	std::vector<double> rtt_us;                                 /* answered ones, measured */
	std::vector<double> ok_rtt_us; /* the good (200) answers among them: admitted requests */
	uint64_t measure_from_ns = 0; /* answers before this (warm-up) are not measured */
	uint32_t measured_ok = 0;     /* good answers in the measured window */
	uint64_t last_answer_ns = 0;
};

void finish(client_state *s, uint32_t id)
{
	if (id < s->n && s->done[id] == 0) {
		s->done[id] = 1;
		s->answered++;
	} else {
		if (id < s->n)
			s->dup++;
		s->bad++;
	}
}

/* Round-trip time of an answer: from the x-ts it carries back (set when the request was
 * sent), else from the send time kept here. */
double rtt_of(const client_state *s, const dpumesh_msg *m, uint64_t now)
{
	const char *v;
	size_t len;
	if (dpumesh_msg_field(m, "x-ts", &v, &len) == 0 && len > 0 && len < 24) {
		char ts[24];
		std::memcpy(ts, v, len);
		ts[len] = 0;
		uint64_t sent = std::strtoull(ts, nullptr, 10);
		if (sent && sent <= now)
			return static_cast<double>(now - sent) / 1e3;
	}
	if (m->req_id < s->sent_at.size())
		return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
								 s->sent_at[m->req_id])
			.count();
	return -1;
}

/* $DPUMESH_CLIENT_SERVICE as a list (comma-separated): requests go round robin. */
std::vector<std::string> client_services()
{
	std::vector<std::string> out;
	std::string all = service_name("DPUMESH_CLIENT_SERVICE");
	size_t pos = 0;
	for (;;) {
		size_t comma = all.find(',', pos);
		out.push_back(all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
		if (comma == std::string::npos)
			break;
		pos = comma + 1;
	}
	return out;
}

/** This thread's scheduler record (/proc/thread-self/schedstat): CPU time, time runnable
 *  but waiting for a CPU, and how many times it was put on a CPU; zeros if unreadable. */
struct sched_stat {
	unsigned long long oncpu_ns = 0, runq_ns = 0, slices = 0;
};
sched_stat read_sched_stat()
{
	sched_stat s;
	if (FILE *f = std::fopen("/proc/thread-self/schedstat", "re")) {
		if (std::fscanf(f, "%llu %llu %llu", &s.oncpu_ns, &s.runq_ns, &s.slices) != 3)
			s = {};
		std::fclose(f);
	}
	return s;
}

int run_client(const char *sock, uint32_t n, uint64_t seed, uint32_t max, bool flood,
	       uint32_t tx_header_slots)
{
	const auto window = static_cast<uint32_t>(env_whole("DPUMESH_CLIENT_WINDOW", 32, 1, 1u << 20));
	const double run_secs = env_seconds("DPUMESH_CLIENT_SECONDS");
	const double warmup_secs = env_seconds("DPUMESH_CLIENT_WARMUP");
	/* requests a second; 0: as fast as the window allows */
	const char *rate_env = std::getenv("DPUMESH_CLIENT_RATE");
	const double rate = rate_env && *rate_env ? real("DPUMESH_CLIENT_RATE", rate_env, 0, 1e12) : 0;
	const std::vector<std::string> services = client_services();
	client_state st;
	st.seed = seed;
	st.max = max;
	st.n = n;
	st.done.assign(n, 0);
	dpumesh_callbacks cb = {};
	cb.on_response = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		auto *s = static_cast<client_state *>(u);
		const uint64_t now = now_ns();
		bool good = false;
		if (m->flags & DPUMESH_OP_ERROR) {
			s->mesh_err++;
		} else if (m->header_ok && m->http_status != 200) {
			/* an error the mesh made (503 no_live_pod, 504 timeout, ...) */
			s->mesh_err++;
			s->mesh_reasons[std::string(m->reason, m->reason_len)]++;
		} else {
			static const bool nosum = std::getenv("DPUMESH_POD_NOSUM") != nullptr;
			const auto &want = body_for(s->seed, m->req_id, s->max);
			const char *v;
			size_t len;
			char sum[16];
			if (nosum) { /* benchmarks: the length only */
				good = m->header_ok && m->http_status == 200 && m->body_len == want.size();
			} else {
				std::snprintf(sum, sizeof(sum), "%08x", fnv(want.data(), want.size()));
				good = m->header_ok && m->http_status == 200 && m->body_len == want.size() &&
				       (want.empty() || std::memcmp(m->body, want.data(), want.size()) == 0) &&
				       dpumesh_msg_field(m, "x-sum", &v, &len) == 0 &&
				       std::string(v, len) == sum;
			}
			if (good && dpumesh_msg_field(m, "x-pod", &v, &len) == 0) {
				const std::string pod(v, len);
				s->per_pod[pod]++;
				/* one echo pod answers in the order it got the requests (the client
				 * sends in req_id order): its answers come back in that order */
				auto it = s->last_id.find(pod);
				if (it != s->last_id.end() && m->req_id <= it->second)
					s->resp_order_bad++;
				s->last_id[pod] = m->req_id;
			}
			if (good && dpumesh_msg_field(m, "x-order", &v, &len) == 0 &&
			    std::string(v, len) == "bad")
				s->order_bad++;
			if (good)
				s->ok++;
			else
				s->bad++;
		}
		if (now >= s->measure_from_ns) {
			double rtt = rtt_of(s, m, now);
			if (rtt >= 0)
				s->rtt_us.push_back(rtt);
			if (rtt >= 0 && good)
				s->ok_rtt_us.push_back(rtt);
			if (good)
				s->measured_ok++;
			s->last_answer_ns = now;
		}
		finish(s, m->req_id);
		dpumesh_msg_release(h, m);
	};
	cb.on_tx_done = [](dpumesh_t *, uint32_t req_id, uint32_t, uint32_t status, void *u) {
		auto *s = static_cast<client_state *>(u);
		if (status != 0) {
			s->refused++;
			finish(s, req_id);
		}
	};
	dpumesh_t *h = open_pod(sock, "client", cb, &st, tx_header_slots);
	uint32_t next = 0, again = 0;
	st.sent_at.resize(n);
	st.rtt_us.reserve(std::min<uint32_t>(n, 1u << 22));
	st.ok_rtt_us.reserve(std::min<uint32_t>(n, 1u << 22));
	const auto t_start = std::chrono::steady_clock::now();
	const sched_stat sched_start = read_sched_stat();
	const uint64_t start_ns = now_ns();
	st.measure_from_ns = start_ns + static_cast<uint64_t>(warmup_secs * 1e9);
	const uint64_t stop_ns = run_secs > 0 ? start_ns + static_cast<uint64_t>(run_secs * 1e9) : UINT64_MAX;
	auto send_one = [&](uint32_t i) {
		const auto &body = body_for(seed, i, max);
		st.sent_at[i] = std::chrono::steady_clock::now();
		dpumesh_request r = {};
		r.service = services[i % services.size()].c_str();
		r.method = "POST";
		r.path = "/echo";
		r.body = body.data();
		r.body_len = static_cast<uint32_t>(body.size());
		r.req_id = i;
		r.step_id = 1;
		std::string seq = std::to_string(seed) + "." + std::to_string(i);
		std::string ts = std::to_string(now_ns());
		dpumesh_field f[2] = {{"x-seq", seq.c_str()}, {"x-ts", ts.c_str()}};
		r.fields = f;
		r.nb_fields = 2;
		return dpumesh_send_request(h, 0, &r);
	};
	if (flood) {
		int rc = 0;
		while (next < n && (rc = send_one(next)) == 0)
			next++;
		std::printf("FULL sent=%u rc=%d\n", next, rc);
		std::fflush(stdout);
	}
	auto finished = [&] { return st.answered >= next; };
	const double stall_secs = env_seconds("DPUMESH_CLIENT_STALL");
	/* a requester that stops draining (tests of answers refused for want of its RX room):
	 * once DPUMESH_CLIENT_PAUSE_AT requests were sent, it takes nothing for
	 * DPUMESH_CLIENT_PAUSE_MS, once */
	const auto pause_at =
		static_cast<uint32_t>(env_whole("DPUMESH_CLIENT_PAUSE_AT", UINT32_MAX, 0, UINT32_MAX));
	auto pause_ms =
		static_cast<uint32_t>(env_whole("DPUMESH_CLIENT_PAUSE_MS", 0, 0, 3'600'000));
	uint32_t seen = 0;
	uint64_t seen_at = now_ns();
	while (next < n || !finished()) {
		const uint32_t answered = st.answered;
		if (answered != seen || answered >= next) {
			seen = answered;
			seen_at = now_ns();
		} else if (stall_secs > 0 && now_ns() - seen_at > static_cast<uint64_t>(stall_secs * 1e9)) {
			/* requests outstanding and nothing back for that long: an answer was lost */
			std::string ids;
			unsigned shown = 0;
			for (uint32_t i = 0; i < next && shown < 8; i++)
				if (!st.done[i]) {
					ids += (ids.empty() ? "" : ",") + std::to_string(i);
					shown++;
				}
			std::printf("STALL sent=%u answered=%u outstanding=%u secs=%.1f req_ids=%s\n", next,
				    answered, next - answered, stall_secs, ids.c_str());
			std::fflush(stdout);
			return 4;
		}
		if (next < n && now_ns() >= stop_ns)
			n = next; /* timed run: stop sending, wait for what is outstanding */
		/* at most `window` requests outstanding: their responses must find RX slots */
		/* a paced client: no more than `rate` a second since the start */
		const uint32_t allowed =
			rate > 0 ? static_cast<uint32_t>(std::min<double>(
					   n, static_cast<double>(now_ns() - start_ns) * rate / 1e9 + 1))
				 : n;
		while (next < n && next < allowed && next - st.answered < window) {
			int rc = send_one(next);
			if (rc == -EAGAIN || rc == -ENOBUFS) {
				again++;
				break;
			}
			if (rc != 0) {
				std::printf("SEND FAILED rc=%d\n", rc);
				return 3;
			}
			next++;
		}
		/* with its window full: a send cut short by a full TX ring (EAGAIN) would leave
		 * fewer requests out than the test asks for (16 once, under ASan: nothing refused) */
		if (next >= pause_at && pause_ms && (next - st.answered >= window || next >= n)) {
			std::printf("PAUSE sent=%u answered=%u ms=%u\n", next, st.answered, pause_ms);
			std::fflush(stdout);
			std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
			pause_ms = 0;
			seen_at = now_ns();
		}
		(void)wait_or_leave(h, rate > 0 ? 1 : 1000);
	}
	dpumesh_stats stats;
	dpumesh_get_stats(h, &stats);
	/* the measured window: from the end of the warm-up to the last answer */
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
	double window_secs = warmup_secs > 0 && st.last_answer_ns > st.measure_from_ns
				     ? static_cast<double>(st.last_answer_ns - st.measure_from_ns) / 1e9
				     : secs;
	std::sort(st.rtt_us.begin(), st.rtt_us.end());
	std::sort(st.ok_rtt_us.begin(), st.ok_rtt_us.end());
	auto pct_of = [](const std::vector<double> &v, double q) {
		return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
	};
	auto pct = [&](double q) { return pct_of(st.rtt_us, q); };
	uint32_t counted = warmup_secs > 0 ? st.measured_ok : st.ok;
	std::printf("PERF rps=%.0f rtt_p50_us=%.1f rtt_p90_us=%.1f rtt_p99_us=%.1f rtt_p999_us=%.1f "
		    "rtt_max_us=%.1f samples=%zu secs=%.3f ok_p50_us=%.1f ok_p99_us=%.1f "
		    "answers_per_s=%.0f\n",
		    window_secs > 0 ? counted / window_secs : 0.0, pct(0.50), pct(0.90), pct(0.99),
		    pct(0.999), st.rtt_us.empty() ? 0.0 : st.rtt_us.back(), st.rtt_us.size(), window_secs,
		    pct_of(st.ok_rtt_us, 0.50), pct_of(st.ok_rtt_us, 0.99),
		    window_secs > 0 ? static_cast<double>(st.rtt_us.size()) / window_secs : 0.0);
	/* the client's own wait for a CPU (the box's scheduler, not the node): per answer */
	const sched_stat sched_end = read_sched_stat();
	const unsigned long long answers = std::max<unsigned long long>(st.ok + st.mesh_err + st.bad, 1);
	std::printf("SCHED oncpu_us=%.0f runq_us=%.0f slices=%llu runq_per_answer_us=%.2f "
		    "oncpu_per_answer_us=%.2f\n",
		    static_cast<double>(sched_end.oncpu_ns - sched_start.oncpu_ns) / 1e3,
		    static_cast<double>(sched_end.runq_ns - sched_start.runq_ns) / 1e3,
		    sched_end.slices - sched_start.slices,
		    static_cast<double>(sched_end.runq_ns - sched_start.runq_ns) / 1e3 / answers,
		    static_cast<double>(sched_end.oncpu_ns - sched_start.oncpu_ns) / 1e3 / answers);
	std::string pods, reasons;
	for (const auto &[pod, count] : st.per_pod)
		pods += (pods.empty() ? "" : ",") + pod + ":" + std::to_string(count);
	for (const auto &[why, count] : st.mesh_reasons)
		reasons += (reasons.empty() ? "" : ",") + why + ":" + std::to_string(count);
	std::printf("DONE sent=%u ok=%u refused=%u mesh_err=%u bad=%u dup=%u again=%u order_bad=%u "
		    "resp_order_bad=%u tx_done=%lu tx_errors=%lu pods=%s reasons=%s\n",
		    next, st.ok, st.refused, st.mesh_err, st.bad, st.dup, again, st.order_bad,
		    st.resp_order_bad,
		    static_cast<unsigned long>(stats.tx_done), static_cast<unsigned long>(stats.tx_errors),
		    pods.empty() ? "-" : pods.c_str(), reasons.empty() ? "-" : reasons.c_str());
	std::fflush(stdout);
	dpumesh_close(h);
	return st.bad == 0 ? 0 : 1;
}

/* ---- flood / nodrain: tenants that take more than their share (isolation tests) ---- */
struct greedy_state {
	uint64_t posted = 0, tx_ok = 0, tx_quota = 0, tx_other = 0, answers = 0;
	std::vector<dpumesh_msg *> kept; /* never released */
};

/* Runs until killed; prints "STAT posted= tx_ok= tx_quota= tx_other= answers=" each second.
 * tx_quota: TX completions with status POLICY (refused: over its quota). */
int run_greedy(const char *sock, bool raw)
{
	static greedy_state st;
	dpumesh_callbacks cb = {};
	cb.on_tx_done = [](dpumesh_t *, uint32_t, uint32_t, uint32_t status, void *) {
		if (status == 0)
			st.tx_ok++;
		else if (status == DPUMESH_STATUS_POLICY)
			st.tx_quota++;
		else
			st.tx_other++;
	};
	cb.on_response = [](dpumesh_t *, dpumesh_msg *m, void *) {
		st.answers++;
		st.kept.push_back(m);
	};
	dpumesh_t *h = open_pod(sock, "client", cb, nullptr);
	const std::string svc = service_name("DPUMESH_CLIENT_SERVICE");
	/* flood: one request header, written once into the first TX header slot and posted
	 * again and again (the DPA copies it each time) */
	uint64_t txh = 0, len = 0;
	dpumesh_pool_range(h, DPUMESH_POOL_TX_HEADER, &txh, &len);
	dpumesh::wire::l7_writer w(reinterpret_cast<uint8_t *>(txh), 1024);
	w.request(svc, "POST", "/echo");
	const uint32_t hlen = static_cast<uint32_t>(w.finish());
	uint64_t next_stat = now_ns() + 1000000000ull;
	for (uint32_t id = 0;; id++) {
		int rc;
		if (raw) {
			sw_descriptor d = {};
			d.header_buf_addr = txh;
			d.header_len = hlen;
			d.req_id = id;
			d.step_id = 1;
			d.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
			rc = dpumesh_post_raw(h, 0, &d);
		} else {
			dpumesh_request r = {};
			r.service = svc.c_str();
			r.method = "POST";
			r.path = "/echo";
			r.body = "greedy";
			r.body_len = 6;
			r.req_id = id;
			r.step_id = 1;
			rc = dpumesh_send_request(h, 0, &r);
		}
		if (rc == 0)
			st.posted++;
		else
			(void)wait_or_leave(h, 1); /* TX completions free room */
		if (now_ns() >= next_stat) {
			next_stat += 1000000000ull;
			std::printf("STAT posted=%" PRIu64 " tx_ok=%" PRIu64 " tx_quota=%" PRIu64
				    " tx_other=%" PRIu64 " answers=%" PRIu64 "\n",
				    st.posted, st.tx_ok, st.tx_quota, st.tx_other, st.answers);
			std::fflush(stdout);
		}
	}
}

/* ---- evil ---- */
struct evil_state {
	std::vector<uint32_t> statuses; /* TX_DONE status per req_id */
	uint32_t got = 0;
	uint32_t responses = 0;
};

int run_evil(const char *sock, uint64_t victim_txh, uint64_t victim_rxb)
{
	evil_state st;
	dpumesh_callbacks cb = {};
	cb.on_tx_done = [](dpumesh_t *, uint32_t req_id, uint32_t, uint32_t status, void *u) {
		auto *s = static_cast<evil_state *>(u);
		if (req_id < s->statuses.size())
			s->statuses[req_id] = status;
		s->got++;
	};
	cb.on_response = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		static_cast<evil_state *>(u)->responses++;
		dpumesh_msg_release(h, m);
	};
	dpumesh_t *h = open_pod(sock, "client", cb, &st);
	uint64_t txh, txh_len, txb, txb_len, rxh, rxh_len;
	dpumesh_pool_range(h, DPUMESH_POOL_TX_HEADER, &txh, &txh_len);
	dpumesh_pool_range(h, DPUMESH_POOL_TX_BODY, &txb, &txb_len);
	dpumesh_pool_range(h, DPUMESH_POOL_RX_HEADER, &rxh, &rxh_len);
	const uint32_t req = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
	/* One well-formed header in our own first TX header slot (not a real L7 header: the
	 * security core checks addresses, the harness checks the header). */
	std::memset(reinterpret_cast<void *>(txh), 'h', 64);
	std::vector<sw_descriptor> bad;
	auto add = [&](uint64_t ha, uint32_t hl, uint64_t ba, uint32_t bl, uint32_t flags) {
		sw_descriptor d = {};
		d.header_buf_addr = ha;
		d.header_len = hl;
		d.body_buf_addr = ba;
		d.body_len = bl;
		d.flags = flags;
		d.dst.pod_id = dpumesh_pod_handle(0, 1); /* a forged destination claim, ignored */
		bad.push_back(d);
	};
	add(victim_txh, 64, 0, 0, req);                   /* 0 header in the victim's pool */
	add(txh, 64, victim_rxb, 64, req);                /* 1 body in the victim's RX pool */
	add(UINT64_MAX - 63, 64, 0, 0, req);              /* 2 header at the top of 2^64 */
	add(txh, 0xfffffff0u, 0, 0, req);                 /* 3 header length near 2^32 */
	add(txh, 64, txb, 0xffffffffu, req);              /* 4 body length near 2^32 */
	add(txh + 64, 64, 0, 0, req);                     /* 5 middle of a slot */
	add(txh, 64, txb + 4096, 64, req);                /* 6 body in the middle of a slot */
	add(txh, 64, 0, 0, req | (1u << 12));             /* 7 reserved flag bit */
	add(txh, 64, 0, 0, DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE | DPUMESH_CASE_LOCAL); /* 8 */
	add(txh, 64, 0, 0, DPUMESH_OP_TX_DONE | DPUMESH_CASE_LOCAL);     /* 9 forged completion */
	add(txh, 64, 0, 0, DPUMESH_OP_REQUEST | DPUMESH_CASE_INGRESS);   /* 10 case */
	add(rxh, 64, 0, 0, req);                          /* 11 own RX pool as TX header */
	add(txh, 64, 0, 0, req | (5u << DPUMESH_STATUS_SHIFT)); /* 12 status bits */
	add(txh + txh_len, 64, 0, 0, req);                /* 13 just past the TX header pool */
	add(0, 0, txb, 64, req);                          /* 14 no header */
	add(txh, 64, txb, 0, req);                        /* 15 body address without length */
	const uint32_t rounds = 3;
	st.statuses.assign(bad.size() * rounds, 0xffffffffu);
	uint32_t posted = 0;
	while (posted < st.statuses.size()) {
		sw_descriptor d = bad[posted % bad.size()];
		d.req_id = posted;
		d.step_id = 9;
		if (dpumesh_post_raw(h, 0, &d) == 0)
			posted++;
		else
			(void)wait_or_leave(h, 100);
	}
	/* A forged response for a request this pod never received, claiming another pod as
	 * its destination: taken by the core (it is well-formed) and refused by the harness. */
	while (st.got < posted)
		(void)wait_or_leave(h, 1000);
	char out[512] = {};
	size_t used = 0;
	for (uint32_t i = 0; i < bad.size(); i++) {
		bool same = true; /* refused the same way every time */
		for (uint32_t r = 1; r < rounds; r++)
			same = same && st.statuses[r * bad.size() + i] == st.statuses[i];
		if (same)
			used += std::snprintf(out + used, sizeof(out) - used, "%u,", st.statuses[i]);
		else
			used += std::snprintf(out + used, sizeof(out) - used, "X,");
	}
	std::printf("DONE statuses=%s responses=%u\n", out, st.responses);
	std::fflush(stdout);
	dpumesh_close(h);
	return 0;
}

const char usage_text[] =
	"usage: dpumesh-pod MODE SOCK [ARGS...]\n"
	"\n"
	"The sample pod, on the libdpumesh C API. SOCK is the node's control socket, or\n"
	"doca:<PCI address of the BlueField PF> for a DOCA node (libdpumesh built with\n"
	"-DDPUMESH_DOCA=ON; docs/host-api.md \"Pods on a DOCA node\").\n"
	"Prints \"READY pod=<id> gen=<g> ...\" once registered and \"DONE ...\" at the end.\n"
	"\n"
	"Modes:\n"
	"  echo SOCK                        answer every request with its body and x-sum\n"
	"                                   (FNV-1a of the body), x-pod, x-order, x-ts fields;\n"
	"                                   status 200, or the request's x-echo-status (100-599)\n"
	"  client SOCK N SEED MAXBODY [flood [TXSLOTS]]\n"
	"                                   send N requests with random bodies of 0..MAXBODY\n"
	"                                   bytes (from SEED), at most 32 outstanding, check each\n"
	"                                   echo; flood: first send without progressing until\n"
	"                                   try-again; TXSLOTS: TX header slots (default 64)\n"
	"  evil SOCK VICTIM_TXH VICTIM_RXB  post malicious descriptors, report the refusals\n"
	"  sink SOCK                        register as \"echo\" (or $DPUMESH_POD_SERVICE), take\n"
	"                                   requests, never answer\n"
	"  hog SOCK                         as sink, and never release them (RX slots run out)\n"
	"  flood SOCK                       post requests without limit from one TX header slot,\n"
	"                                   drain TX completions, never release what comes in\n"
	"  nodrain SOCK                     send requests as fast as the API lets, never release\n"
	"                                   the answers; both print STAT lines each second\n"
	"\n"
	"Environment:\n"
	"  DPUMESH_POD_SERVICE=NAME         the service echo registers as (default echo)\n"
	"  DPUMESH_CLIENT_SERVICE=A[,B..]   the services client calls, round robin (default echo)\n"
	"  DPUMESH_CLIENT_WINDOW=N          client: requests outstanding at most (default 32)\n"
	"  DPUMESH_CLIENT_SECONDS=S         client: stop sending after S seconds (N is a cap)\n"
	"  DPUMESH_CLIENT_WARMUP=S          client: answers in the first S seconds not measured\n"
	"  DPUMESH_CLIENT_STALL=S           client: nothing back for S seconds with requests\n"
	"                                   outstanding: print STALL and exit 4\n"
	"  DPUMESH_CLIENT_RATE=R            client: send at most R requests a second\n"
	"  DPUMESH_CLIENT_FIXED=1           client: every body exactly MAXBODY bytes\n"
	"  DPUMESH_POD_NOSUM=1              no checksums (benchmarks)\n"
	"  DPUMESH_ECHO_DELAY_US=N          echo: wait N us before each answer (a slow service)\n"
	"  DPUMESH_POD_GEOMETRY=default|small  pools: see below\n"
	"  DPUMESH_TEST_BODY_SLOT=BYTES     body slot size of the test geometry\n"
	"  DPUMESH_POD_BODY_SLOTS=N         body slots of each body pool (test geometry)\n"
	"  DPUMESH_POD_RX_BODY_SLOTS=N      body slots of the RX body pool alone (after the above)\n"
	"\n"
	"Pool geometry (slots x slot size):\n"
	"  test (the default here)  TX header 64 x 1 KiB, TX body 64 x 8 KiB, RX header\n"
	"                           64 x 1 KiB, RX body 64 x 8 KiB, SQ depth 256: bodies over\n"
	"                           8 KiB are refused (the mesh answers 503 too_large);\n"
	"                           DPUMESH_TEST_BODY_SLOT over 64 KiB: 16 body slots;\n"
	"                           client TXSLOTS over 64: SQ depth TXSLOTS/2\n"
	"  default                  the library's (dpumesh_default_geometry): 256 x 1 KiB\n"
	"                           headers, 256 x 64 KiB bodies, SQ depth 256\n"
	"  small                    64 x 512 B headers, 64 x 1 KiB bodies, SQ depth 256\n"
	"\n"
	"Exit: 0 done, 1 bad answers, 2 registration failed, 3 send failed, 4 stall, 64 usage\n"
	"(also a number, argument or variable, that is not one or is out of range).\n";

} // namespace

int main(int argc, char **argv)
{
	if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
		std::fputs(usage_text, stdout);
		return 0;
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	/* SIGTERM ends the echo loop: undo an inherited ignore or block. */
	std::signal(SIGTERM, SIG_DFL);
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, nullptr);
	if (argc >= 3 && std::strcmp(argv[1], "echo") == 0)
		return run_echo(argv[2]);
	if (argc >= 3 && (std::strcmp(argv[1], "sink") == 0 || std::strcmp(argv[1], "hog") == 0))
		return run_sink(argv[2], std::strcmp(argv[1], "hog") == 0);
	if (argc >= 6 && std::strcmp(argv[1], "client") == 0)
		return run_client(argv[2], static_cast<uint32_t>(whole("N", argv[3], 0, UINT32_MAX)),
				  whole("SEED", argv[4], 0, UINT64_MAX),
				  static_cast<uint32_t>(whole("MAXBODY", argv[5], 0, UINT32_MAX)),
				  argc >= 7 && std::strcmp(argv[6], "flood") == 0,
				  argc >= 8 ? static_cast<uint32_t>(whole("TXSLOTS", argv[7], 1, 65535))
					    : 64);
	if (argc >= 3 && (std::strcmp(argv[1], "flood") == 0 || std::strcmp(argv[1], "nodrain") == 0))
		return run_greedy(argv[2], std::strcmp(argv[1], "flood") == 0);
	if (argc >= 5 && std::strcmp(argv[1], "evil") == 0)
		return run_evil(argv[2], whole("VICTIM_TXH", argv[3], 0, UINT64_MAX),
				whole("VICTIM_RXB", argv[4], 0, UINT64_MAX));
	std::fputs(usage_text, stderr);
	return 64;
}
