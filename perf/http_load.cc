// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-http-load: the baselines' load program, HTTP/1.1 keep-alive POSTs with N outstanding.
//
// N connections on one epoll thread, each with one request in flight (closed loop: the
// next request leaves when the answer is in), for a fixed time. Every answer must be 2xx
// with a body as long as the request's (the echo): anything else is counted, never hidden.
// A connection that fails is counted, reopened, and its request sent again (a retry).
// Latency is send-to-last-byte per request, over the measured window only (after warm-up).
//
//   dpumesh-http-load --port P --conns 8 --size 4096 --seconds 3 --warmup 0.5
// Prints one line: PERF rps=... p50_us=... p90_us=... p99_us=... p999_us=... ok=...
// non2xx=... bad_body=... errors=... retries=... unanswered=... unconnected=... secs=...;
// exit 1 when anything failed (unconnected: connections the server never accepted).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dpumesh/common/numbers.h"
#include "http_util.h"

namespace {

using clock_type = std::chrono::steady_clock;

struct conn {
	int fd = -1;
	size_t sent = 0;        /* bytes of the request written */
	std::string in;         /* the head, until it is whole */
	bool have_head = false;
	size_t body_left = 0;   /* body bytes still to come */
	size_t body_len = 0;
	int status = 0;
	bool busy = false;      /* a request is in flight */
	bool connected = false; /* the connect completed (first EPOLLOUT) */
	clock_type::time_point t0;
};

struct totals {
	unsigned long ok = 0, non2xx = 0, bad_body = 0, errors = 0, retries = 0;
	std::vector<double> lat_us;
};

int open_conn(const sockaddr_in &to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, reinterpret_cast<const sockaddr *>(&to), sizeof(to)) != 0 && errno != EINPROGRESS) {
		::close(fd);
		return -1;
	}
	return fd;
}

} // namespace

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	int port = 0;
	unsigned conns = 1;
	size_t size = 64;
	double seconds = 3, warmup = 0.5;
	const char *prog = "dpumesh-http-load";
	using dpumesh::real_arg;
	using dpumesh::whole_arg;
	for (int i = 1; i < argc; i++) {
		auto arg = [&](const char *name) { return std::strcmp(argv[i], name) == 0 && i + 1 < argc; };
		if (arg("--port"))
			port = static_cast<int>(whole_arg(prog, "--port", argv[++i], 1, 65535));
		else if (arg("--addr"))
			addr = argv[++i];
		else if (arg("--conns"))
			conns = static_cast<unsigned>(whole_arg(prog, "--conns", argv[++i], 1, 4096));
		else if (arg("--size"))
			size = whole_arg(prog, "--size", argv[++i], 0, 1ull << 30);
		else if (arg("--seconds"))
			seconds = real_arg(prog, "--seconds", argv[++i], 0.01, 86400);
		else if (arg("--warmup"))
			warmup = real_arg(prog, "--warmup", argv[++i], 0, 3600);
		else {
			std::fprintf(stderr, "usage: dpumesh-http-load --port P [--addr A] [--conns N] "
					     "[--size BYTES] [--seconds S] [--warmup S]\n");
			return 2;
		}
	}
	if (port <= 0 || conns == 0 || conns > 4096) {
		std::fprintf(stderr, "dpumesh-http-load: need --port and 1..4096 --conns\n");
		return 2;
	}
	std::signal(SIGPIPE, SIG_IGN);
	sockaddr_in to = {};
	to.sin_family = AF_INET;
	to.sin_port = htons(static_cast<uint16_t>(port));
	if (inet_pton(AF_INET, addr, &to.sin_addr) != 1) {
		std::fprintf(stderr, "dpumesh-http-load: bad address %s\n", addr);
		return 2;
	}
	std::string req = "POST /echo HTTP/1.1\r\nHost: echo\r\nContent-Type: application/octet-stream\r\n"
			  "Content-Length: " + std::to_string(size) + "\r\n\r\n";
	for (size_t k = 0; k < size; k++)
		req.push_back(static_cast<char>('a' + k % 26));

	int ep = epoll_create1(EPOLL_CLOEXEC);
	std::vector<conn> cs(conns);
	totals t;
	t.lat_us.reserve(1 << 20);
	auto arm = [&](unsigned i, bool out) {
		epoll_event ev = {};
		ev.events = EPOLLIN | (out ? EPOLLOUT : 0u);
		ev.data.u32 = i;
		epoll_ctl(ep, EPOLL_CTL_MOD, cs[i].fd, &ev);
	};
	auto start_conn = [&](unsigned i) {
		conn &c = cs[i];
		c = conn{};
		c.fd = open_conn(to);
		if (c.fd < 0)
			return false;
		epoll_event ev = {};
		ev.events = EPOLLIN | EPOLLOUT;
		ev.data.u32 = i;
		epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
		return true;
	};
	const auto t_begin = clock_type::now();
	const auto t_measure = t_begin + std::chrono::duration_cast<clock_type::duration>(
						 std::chrono::duration<double>(warmup));
	const auto t_stop = t_measure + std::chrono::duration_cast<clock_type::duration>(
						std::chrono::duration<double>(seconds));
	const auto t_give_up = t_stop + std::chrono::seconds(5);
	bool stopping = false;
	/* writes what it can of the request; false on error */
	auto pump_out = [&](unsigned i) {
		conn &c = cs[i];
		if (!c.busy) {
			if (stopping)
				return true;
			c.busy = true;
			c.sent = 0;
			c.t0 = clock_type::now();
		}
		while (c.sent < req.size()) {
			ssize_t w = ::send(c.fd, req.data() + c.sent, req.size() - c.sent, MSG_NOSIGNAL);
			if (w < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				return false;
			}
			c.sent += static_cast<size_t>(w);
		}
		arm(i, c.sent < req.size());
		return true;
	};
	auto fail = [&](unsigned i) {
		t.errors++;
		bool was_busy = cs[i].busy;
		epoll_ctl(ep, EPOLL_CTL_DEL, cs[i].fd, nullptr);
		::close(cs[i].fd);
		cs[i].fd = -1;
		if (stopping)
			return;
		if (was_busy)
			t.retries++;
		if (start_conn(i))
			(void)pump_out(i);
	};
	for (unsigned i = 0; i < conns; i++)
		if (!start_conn(i)) {
			std::fprintf(stderr, "dpumesh-http-load: connect: %s\n", std::strerror(errno));
			return 1;
		}
	std::vector<char> buf(256 * 1024);
	epoll_event evs[256];
	for (;;) {
		auto now = clock_type::now();
		if (!stopping && now >= t_stop)
			stopping = true;
		unsigned in_flight = 0;
		for (const conn &c : cs)
			in_flight += c.fd >= 0 && c.busy;
		if (stopping && (in_flight == 0 || now >= t_give_up))
			break;
		int n = epoll_wait(ep, evs, 256, 50);
		for (int e = 0; e < n; e++) {
			unsigned i = evs[e].data.u32;
			conn &c = cs[i];
			if (c.fd < 0)
				continue;
			if (evs[e].events & EPOLLERR) {
				fail(i);
				continue;
			}
			if (evs[e].events & EPOLLOUT) {
				c.connected = true;
				if (!pump_out(i)) {
					fail(i);
					continue;
				}
			}
			if (!(evs[e].events & (EPOLLIN | EPOLLHUP)))
				continue;
			bool dead = false;
			for (;;) {
				ssize_t r = ::recv(c.fd, buf.data(), buf.size(), 0);
				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
					dead = true;
					break;
				}
				if (r < 0)
					break;
				size_t off = 0, len = static_cast<size_t>(r);
				while (off < len) {
					if (!c.have_head) {
						c.in.append(buf.data() + off, len - off);
						off = len;
						dpumesh::perf::http_head h;
						auto pr = dpumesh::perf::parse_head(c.in, false, &h);
						if (pr == dpumesh::perf::parse_result::incomplete)
							break;
						if (pr == dpumesh::perf::parse_result::bad || !c.busy) {
							dead = true;
							break;
						}
						c.have_head = true;
						c.status = h.status;
						c.body_len = h.content_length;
						size_t extra = c.in.size() - h.head_len;
						c.body_left = h.content_length;
						/* body bytes that came with the head */
						off = len - extra;
						c.in.clear();
					}
					size_t take = std::min(c.body_left, len - off);
					c.body_left -= take;
					off += take;
					if (c.body_left == 0) {
						auto done = clock_type::now();
						bool good_status = c.status >= 200 && c.status < 300;
						if (!good_status)
							t.non2xx++;
						else if (c.body_len != size)
							t.bad_body++;
						else if (done >= t_measure && done <= t_stop) {
							t.ok++;
							t.lat_us.push_back(
								std::chrono::duration<double, std::micro>(done - c.t0).count());
						}
						c.have_head = false;
						c.busy = false;
						if (off < len) { /* bytes after the answer: never sent by an echo */
							dead = true;
							break;
						}
						if (!pump_out(i)) {
							dead = true;
							break;
						}
					}
				}
				if (dead)
					break;
			}
			if (dead)
				fail(i);
		}
	}
	unsigned lost = 0, unconnected = 0;
	for (conn &c : cs) {
		lost += c.fd >= 0 && c.busy;
		unconnected += c.fd >= 0 && !c.connected; /* the server never took the connection */
		if (c.fd >= 0)
			::close(c.fd);
	}
	std::sort(t.lat_us.begin(), t.lat_us.end());
	auto pct = [&](double q) {
		return t.lat_us.empty() ? 0.0 : t.lat_us[std::min(t.lat_us.size() - 1, static_cast<size_t>(q * t.lat_us.size()))];
	};
	std::printf("PERF rps=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f ok=%lu "
		    "non2xx=%lu bad_body=%lu errors=%lu retries=%lu unanswered=%u unconnected=%u secs=%.3f\n",
		    t.ok / seconds, pct(0.5), pct(0.9), pct(0.99), pct(0.999),
		    t.lat_us.empty() ? 0.0 : t.lat_us.back(), t.ok, t.non2xx, t.bad_body, t.errors,
		    t.retries, lost, unconnected, seconds);
	return t.non2xx || t.bad_body || t.errors || lost || unconnected || t.ok == 0 ? 1 : 0;
}
