// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-pcapdump: prints the mesh messages in a capture, like tshark for this protocol.
// Frames are validated and reassembled by the data plane's own code (lib/wire), so the
// drop reasons printed are exactly those dpumesh would count.
#include <arpa/inet.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>

#include "dpumesh/common/eal.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/common/fnv.h"
#include "dpumesh/common/numbers.h"
#include "dpumesh/wire/l7.h"

namespace {

using namespace dpumesh;

std::string addr_str(const wire::endpoint &e)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (e.is_v4()) {
		inet_ntop(AF_INET, e.ip + 12, buf, sizeof(buf));
		return std::string(buf) + ":" + std::to_string(e.port);
	}
	inet_ntop(AF_INET6, e.ip, buf, sizeof(buf));
	return "[" + std::string(buf) + "]:" + std::to_string(e.port);
}

void usage(FILE *f)
{
	std::fputs("Usage: dpumesh-pcapdump [--mesh-port PORT | --any-port] [--fields] [--quiet] FILE.pcap\n"
		   "Prints each mesh message (one line, with an FNV-1a sum of its body), then\n"
		   "counts of frames, messages and drops by reason. Only frames to the mesh\n"
		   "port are read, unless --any-port (e.g. a node's replies to clients' ports). --fields also prints every L7 field; --quiet only the counts.\n",
		   f);
}

} // namespace

int main(int argc, char **argv)
{
	unsigned mesh_port = 7000;
	bool fields = false, quiet = false, any_port = false;
	static const option longopts[] = {
		{"mesh-port", required_argument, nullptr, 'm'},
		{"fields", no_argument, nullptr, 'f'},
		{"any-port", no_argument, nullptr, 'a'},
		{"quiet", no_argument, nullptr, 'q'},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "m:fqah", longopts, nullptr)) != -1) {
		switch (c) {
		case 'a': any_port = true; break;
		case 'm': {
			const auto v = dpumesh::parse_whole(optarg, 1, 65535);
			if (!v) {
				std::fprintf(stderr, "dpumesh-pcapdump: bad --mesh-port \"%s\"\n", optarg);
				return 2;
			}
			mesh_port = static_cast<unsigned>(*v);
			break;
		}
		case 'f': fields = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(argv[optind], err);
	if (!p) {
		std::fprintf(stderr, "dpumesh-pcapdump: %s\n", err);
		return 1;
	}
	std::string prefix = "--file-prefix=dpumesh-pcapdump-" + std::to_string(getpid());
	const char *eal[] = {argv[0], "--no-huge", "-m", "512", "--no-pci", "--no-shconf",
			     "--no-telemetry", prefix.c_str(), "--log-level=*:error", "-l", "0"};
	if (rte_eal_init(static_cast<int>(std::size(eal)), const_cast<char **>(eal)) < 0) {
		std::fprintf(stderr, "dpumesh-pcapdump: EAL initialisation failed\n");
		return 1;
	}
	/* jumbo-sized mbufs, so any frame up to 9600 B fits in one */
	rte_mempool *mp = rte_pktmbuf_pool_create("pcapdump", 16383, 0, 0,
						  9600 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
	wire::reasm_config rc;
	rc.max_mbufs = 12000;
	auto reasm = wire::reassembler::create(rc, "pcapdump", SOCKET_ID_ANY);
	if (!mp || !reasm) {
		std::fprintf(stderr, "dpumesh-pcapdump: out of memory\n");
		return 1;
	}
	uint64_t drops[static_cast<size_t>(wire::wire_drop::count)] = {};
	unsigned long frames = 0, messages = 0, requests = 0, responses = 0, bad_l7 = 0;
	pcap_pkthdr *h;
	const u_char *data;
	std::vector<uint8_t> msgbuf;
	while (pcap_next_ex(p, &h, &data) == 1) {
		frames++;
		rte_mbuf *m = rte_pktmbuf_alloc(mp);
		if (!m || h->caplen > rte_pktmbuf_tailroom(m)) {
			drops[static_cast<size_t>(wire::wire_drop::memory_limit)]++;
			rte_pktmbuf_free(m);
			continue;
		}
		std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(h->caplen)), data, h->caplen);
		wire::parsed_frame pf;
		/* --any-port: also what a node sent to clients' own ports (its replies) */
		wire::wire_drop why = wire::parse_frame(
			m, any_port ? 0 : rte_cpu_to_be_16(static_cast<uint16_t>(mesh_port)), 16u << 20, &pf);
		if (why != wire::wire_drop::none) {
			drops[static_cast<size_t>(why)]++;
			rte_pktmbuf_free(m);
			continue;
		}
		wire::message msg;
		if ((*reasm)->input(m, pf, frames, &msg) != wire::reasm_result::complete)
			continue;
		messages++;
		msgbuf.resize(msg.msg_len);
		const void *bytes = rte_pktmbuf_read(msg.chain, 0, msg.msg_len, msgbuf.data());
		if (bytes != msgbuf.data())
			std::memcpy(msgbuf.data(), bytes, msg.msg_len);
		rte_pktmbuf_free(msg.chain);
		wire::l7_view v;
		wire::l7_error le = wire::l7_decode(msgbuf.data(), msg.l7_len, &v);
		if (le != wire::l7_error::ok) {
			bad_l7++;
			if (!quiet)
				std::printf("%lu %s msg %u: bad L7 header (%s)\n", frames,
					    addr_str(msg.src).c_str(), msg.msg_id, wire::l7_error_name(le));
			continue;
		}
		(v.kind == wire::l7_kind::request ? requests : responses)++;
		if (quiet)
			continue;
		std::string what = v.kind == wire::l7_kind::request
					   ? std::string(v.method) + " " + std::string(v.service) + " " +
						     std::string(v.path)
					   : std::to_string(v.status) +
						     (v.reason.empty() ? "" : " " + std::string(v.reason));
		/* FNV-1a of the body, to compare bodies across captures */
		uint32_t sum = fnv1a(msgbuf.data() + msg.l7_len, msg.msg_len - msg.l7_len);
		std::printf("%lu %s msg %u corr %#lx %s header %u body %u sum %08x\n", frames,
			    addr_str(msg.src).c_str(), msg.msg_id, msg.correlation, what.c_str(),
			    msg.l7_len, msg.msg_len - msg.l7_len, sum);
		if (fields)
			v.for_each([](std::string_view n, std::string_view x) {
				std::printf("    %.*s: %.*s\n", int(n.size()), n.data(), int(x.size()),
					    x.data());
			});
	}
	pcap_close(p);
	uint32_t incomplete = (*reasm)->in_flight();
	(*reasm)->flush();
	for (size_t d = 0; d < std::size(drops); d++)
		drops[d] += (*reasm)->stats().drops[d].get();
	drops[static_cast<size_t>(wire::wire_drop::timeout)] -= incomplete;
	std::printf("frames=%lu messages=%lu requests=%lu responses=%lu bad_l7=%lu incomplete=%u "
		    "duplicates=%lu",
		    frames, messages, requests, responses, bad_l7, incomplete,
		    (*reasm)->stats().duplicates.get());
	for (size_t d = 1; d < std::size(drops); d++)
		if (drops[d])
			std::printf(" %s=%lu", wire::wire_drop_name(static_cast<wire::wire_drop>(d)),
				    drops[d]);
	std::printf("\n");
	reasm->reset();
	rte_mempool_free(mp);
	dpumesh::eal_cleanup();
	return 0;
}
