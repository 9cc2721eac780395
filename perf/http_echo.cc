// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-http-echo: the baselines' server, an HTTP/1.1 keep-alive echo on one epoll thread.
//
// Answers every request with 200 and its body (as the echo pod does), pipelined requests
// included. Requests must carry Content-Length (no chunked bodies); anything it cannot
// parse gets 400 and the connection is closed. Prints "LISTEN port=P" once listening, and
// its counters on SIGTERM/SIGINT.
//
//   dpumesh-http-echo [--port P] [--addr 127.0.0.1]     (port 0: the kernel picks one)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dpumesh/common/numbers.h"
#include "http_util.h"

namespace {

volatile sig_atomic_t g_stop = 0;

struct conn {
	int fd;
	std::string in;  /* bytes read, not parsed yet */
	std::string out; /* bytes to write */
	size_t out_off = 0;
	bool want_out = false;
};

struct counters {
	unsigned long requests = 0, bad = 0, accepted = 0, closed = 0;
};

/* Parses and answers every whole request in c.in; false: close the connection. */
bool serve(conn &c, counters &k)
{
	for (;;) {
		dpumesh::perf::http_head h;
		auto r = dpumesh::perf::parse_head(c.in, /*request=*/true, &h);
		if (r == dpumesh::perf::parse_result::incomplete)
			return true;
		if (r == dpumesh::perf::parse_result::bad) {
			k.bad++;
			c.out += "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
			return false;
		}
		if (c.in.size() < h.head_len + h.content_length)
			return true;
		char line[96];
		int n = std::snprintf(line, sizeof(line), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
				      h.content_length);
		c.out.append(line, static_cast<size_t>(n));
		c.out.append(c.in, h.head_len, h.content_length);
		c.in.erase(0, h.head_len + h.content_length);
		k.requests++;
	}
}

/* Writes what it can; false on a write error. */
bool flush(conn &c)
{
	while (c.out_off < c.out.size()) {
		ssize_t w = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		c.out_off += static_cast<size_t>(w);
	}
	c.out.clear();
	c.out_off = 0;
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	int port = 0;
	for (int i = 1; i < argc; i++) {
		if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			port = static_cast<int>(
				dpumesh::whole_arg("dpumesh-http-echo", "--port", argv[++i], 0, 65535));
		else if (std::strcmp(argv[i], "--addr") == 0 && i + 1 < argc)
			addr = argv[++i];
		else {
			std::fprintf(stderr, "usage: dpumesh-http-echo [--port P] [--addr A]\n");
			return 2;
		}
	}
	std::signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {};
	sa.sa_handler = [](int) { g_stop = 1; };
	sigaction(SIGTERM, &sa, nullptr);
	sigaction(SIGINT, &sa, nullptr);

	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(static_cast<uint16_t>(port));
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    bind(ls, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) != 0 || listen(ls, 1024) != 0) {
		std::fprintf(stderr, "dpumesh-http-echo: %s:%d: %s\n", addr, port, std::strerror(errno));
		return 1;
	}
	socklen_t sl = sizeof(sin);
	getsockname(ls, reinterpret_cast<sockaddr *>(&sin), &sl);
	std::printf("LISTEN port=%u\n", ntohs(sin.sin_port));
	std::fflush(stdout);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_event ev = {};
	ev.events = EPOLLIN;
	ev.data.fd = ls;
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	std::unordered_map<int, std::unique_ptr<conn>> conns;
	counters k;
	auto close_conn = [&](int fd) {
		epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
		::close(fd);
		conns.erase(fd);
		k.closed++;
	};
	std::string buf(256 * 1024, '\0');
	epoll_event evs[64];
	while (!g_stop) {
		int n = epoll_wait(ep, evs, 64, 200);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ls) {
				int c;
				while ((c = accept4(ls, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					epoll_event ce = {};
					ce.events = EPOLLIN;
					ce.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
					conns[c] = std::make_unique<conn>(conn{c, {}, {}, 0, false});
					k.accepted++;
				}
				continue;
			}
			auto it = conns.find(fd);
			if (it == conns.end())
				continue;
			conn &c = *it->second;
			bool alive = true;
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
				for (;;) {
					ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
					if (r > 0) {
						c.in.append(buf.data(), static_cast<size_t>(r));
						continue;
					}
					if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
						alive = false;
					break;
				}
				if (!serve(c, k)) {
					(void)flush(c); /* the 400, if it fits */
					alive = false;
				}
			}
			if (alive && !flush(c))
				alive = false;
			if (!alive) {
				close_conn(fd);
				continue;
			}
			bool want = c.out_off < c.out.size();
			if (want != c.want_out) {
				epoll_event ce = {};
				ce.events = EPOLLIN | (want ? EPOLLOUT : 0u);
				ce.data.fd = fd;
				epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ce);
				c.want_out = want;
			}
		}
	}
	std::printf("DONE requests=%lu bad=%lu accepted=%lu closed=%lu\n", k.requests, k.bad,
		    k.accepted, k.closed);
	return 0;
}
