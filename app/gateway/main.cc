// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-gateway: the HTTP ingress gateway of the mesh (lib/gateway); wires config, the
// libevent loop and signals. Usage: dpumesh-gateway --config FILE
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <event2/event.h>

#include "dpumesh/gateway/gateway.h"

using namespace dpumesh;

int main(int argc, char **argv)
{
	std::string path;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if ((a == "-c" || a == "--config") && i + 1 < argc) {
			path = argv[++i];
		} else if (a == "-h" || a == "--help") {
			std::printf("usage: dpumesh-gateway --config FILE\n"
				    "HTTP/1.1 gateway into the mesh; config: docs/gateway.md\n");
			return 0;
		} else {
			std::fprintf(stderr, "dpumesh-gateway: unknown argument \"%s\" (try --help)\n",
				     a.c_str());
			return 2;
		}
	}
	if (path.empty()) {
		std::fprintf(stderr, "dpumesh-gateway: --config FILE is required\n");
		return 2;
	}
	auto cfg = gateway::load_config_file(path);
	if (!cfg) {
		std::fprintf(stderr, "dpumesh-gateway: config: %s\n", cfg.error().message().c_str());
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	event_base *base = event_base_new();
	auto gw = gateway::server::create(cfg.value(), base);
	if (!gw) {
		std::fprintf(stderr, "dpumesh-gateway: %s\n", gw.error().message().c_str());
		return 1;
	}
	auto stop = [](evutil_socket_t, short, void *b) {
		event_base_loopexit(static_cast<event_base *>(b), nullptr);
	};
	event *sint = evsignal_new(base, SIGINT, stop, base);
	event *sterm = evsignal_new(base, SIGTERM, stop, base);
	event_add(sint, nullptr);
	event_add(sterm, nullptr);
	std::printf("dpumesh-gateway: READY listen=%s admin=%s routes=%zu nodes=%zu "
		    "max_connections=%u\n",
		    cfg.value().listen.str().c_str(),
		    cfg.value().admin.port ? cfg.value().admin.str().c_str() : "-",
		    cfg.value().routes.size(), cfg.value().nodes.size(),
		    gw.value()->max_connections());
	std::fflush(stdout);
	event_base_dispatch(base);
	std::printf("dpumesh-gateway: final %s\n", gw.value()->summary().c_str());
	gw.value().reset();
	event_free(sint);
	event_free(sterm);
	event_base_free(base);
	return 0;
}
