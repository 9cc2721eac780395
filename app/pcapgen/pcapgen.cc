// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-pcapgen: writes realistic mesh traffic captures for replay through net_pcap:
// requests and responses to a mix of services, body sizes from 0 B to 1 MiB, IPv4 and
// IPv6, fragmented messages, and chosen shares of malformed and non-mesh frames. Frames
// are built by the data plane's own wire library (lib/wire) on a small in-process EAL.
#include <arpa/inet.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dpumesh/common/eal.h"
#include "dpumesh/common/numbers.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"

namespace {

using namespace dpumesh;

struct gen_options {
	std::string out;
	unsigned messages = 1000;
	unsigned frames = 0; /* stop at exactly this many frames (0: no limit) */
	std::vector<std::string> services = {"echo"};
	uint32_t min_body = 0, max_body = 4096;
	unsigned mesh_port = 7000;
	unsigned mtu = 1500;
	double ipv6_share = 0.25;
	double response_share = 0.0;
	double malformed_share = 0.0; /* messages with one corrupted frame */
	double other_share = 0.0;     /* extra non-mesh frames, as a share of messages */
	unsigned frame_size = 0;      /* one frame per message of this size (0: --body decides) */
	unsigned seed = 1;
	std::vector<std::pair<std::string, std::string>> fields; /* on every request */
};

void usage(FILE *f)
{
	std::fputs(
		"Usage: dpumesh-pcapgen --out FILE [options]\n"
		"Writes a capture of mesh messages (docs/wire.md) for replay through net_pcap.\n"
		"  --messages N          messages to write (default 1000)\n"
		"  --frames N            stop at exactly N frames (messages that would not fit\n"
		"                        whole are not written)\n"
		"  --services a,b,...    services the requests go to (default echo)\n"
		"  --body MIN:MAX        body sizes, log-uniform in [MIN, MAX] bytes (default 0:4096;\n"
		"                        at most 1048576)\n"
		"  --frame-size N        one frame of N bytes per message (Ethernet header to the end\n"
		"                        of the body, no FCS), path \"/\" and no extra fields: the body\n"
		"                        fills what the headers leave; smaller than the headers gives\n"
		"                        the smallest frame (no body)\n"
		"  --mtu N               IP MTU of the frames (default 1500)\n"
		"  --mesh-port PORT      destination UDP port (default 7000)\n"
		"  --ipv6-share P        share of messages over IPv6 (default 0.25)\n"
		"  --response-share P    share of messages that are responses (default 0)\n"
		"  --malformed-share P   share of messages with one corrupted frame (default 0)\n"
		"  --other-share P       non-mesh frames added, per message (default 0)\n"
		"  --header NAME:VALUE   a field on every request (repeatable; NAME lowercase), e.g.\n"
		"                        \"authorization:Bearer <JWT>\"\n"
		"  --seed N              random seed (default 1)\n"
		"The last line of output is a machine-readable summary.\n",
		f);
}

bool parse_share(const char *s, double &out)
{
	const auto v = dpumesh::parse_real(s, 0, 1);
	if (v)
		out = *v;
	return v.has_value();
}

bool parse_uint(const char *s, unsigned &out, unsigned max)
{
	const auto v = dpumesh::parse_whole(s, 0, max);
	if (v)
		out = static_cast<unsigned>(*v);
	return v.has_value();
}

/** Corruptions applied to one frame of a malformed message. */
enum class corruption { bad_magic, bad_version, bad_kind, reserved, bad_offset, truncated, count };

void corrupt(std::vector<uint8_t> &f, corruption c, bool v6)
{
	size_t l3 = v6 ? sizeof(rte_ipv6_hdr) : sizeof(rte_ipv4_hdr);
	size_t fh = sizeof(rte_ether_hdr) + l3 + sizeof(rte_udp_hdr);
	switch (c) {
	case corruption::bad_magic: f[fh] ^= 0xff; break;
	case corruption::bad_version: f[fh + 2] = 0x7f; break;
	case corruption::bad_kind: f[fh + 3] = 9; break;
	case corruption::reserved: f[fh + 31] = 1; break;
	case corruption::bad_offset: f[fh + 12] = 0xff; break;
	case corruption::truncated:
		/* cut the frame inside its fragment header, keeping IP/UDP lengths consistent */
		f.resize(fh + 10);
		if (v6) {
			uint16_t plen = static_cast<uint16_t>(sizeof(rte_udp_hdr) + 10);
			f[sizeof(rte_ether_hdr) + 4] = static_cast<uint8_t>(plen >> 8);
			f[sizeof(rte_ether_hdr) + 5] = static_cast<uint8_t>(plen);
		} else {
			uint16_t tot = static_cast<uint16_t>(l3 + sizeof(rte_udp_hdr) + 10);
			auto *ip = reinterpret_cast<rte_ipv4_hdr *>(f.data() + sizeof(rte_ether_hdr));
			ip->total_length = rte_cpu_to_be_16(tot);
			ip->hdr_checksum = 0;
			ip->hdr_checksum = rte_ipv4_cksum(ip);
		}
		{
			uint16_t ul = static_cast<uint16_t>(sizeof(rte_udp_hdr) + 10);
			f[sizeof(rte_ether_hdr) + l3 + 4] = static_cast<uint8_t>(ul >> 8);
			f[sizeof(rte_ether_hdr) + l3 + 5] = static_cast<uint8_t>(ul);
		}
		break;
	case corruption::count: break;
	}
	/* the UDP checksum made again: the frame is dropped for what was done to it, not for a
	 * checksum that no longer matches (receivers check it first) */
	uint8_t *ip = f.data() + sizeof(rte_ether_hdr);
	auto *udp = reinterpret_cast<rte_udp_hdr *>(ip + l3);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = v6 ? rte_ipv6_udptcp_cksum(reinterpret_cast<rte_ipv6_hdr *>(ip), udp)
			      : rte_ipv4_udptcp_cksum(reinterpret_cast<rte_ipv4_hdr *>(ip), udp);
}

std::vector<uint8_t> other_frame(std::mt19937 &rng, unsigned mesh_port)
{
	std::vector<uint8_t> f(sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr) + 64);
	auto *eth = reinterpret_cast<rte_ether_hdr *>(f.data());
	std::memset(eth->dst_addr.addr_bytes, 0xff, 6);
	unsigned kind = rng() % 3;
	if (kind == 0) {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		return f;
	}
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	auto *ip = reinterpret_cast<rte_ipv4_hdr *>(eth + 1);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(f.size() - sizeof(*eth)));
	ip->time_to_live = 64;
	ip->next_proto_id = kind == 1 ? IPPROTO_TCP : IPPROTO_UDP;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	auto *udp = reinterpret_cast<rte_udp_hdr *>(ip + 1);
	udp->dst_port = rte_cpu_to_be_16(static_cast<uint16_t>(mesh_port + 1));
	udp->dgram_len = rte_cpu_to_be_16(sizeof(rte_udp_hdr) + 64);
	return f;
}

int init_eal(const char *prog)
{
	std::string prefix = "--file-prefix=dpumesh-pcapgen-" + std::to_string(getpid());
	const char *args[] = {prog, "--no-huge", "-m", "64", "--no-pci", "--no-shconf",
			      "--no-telemetry", prefix.c_str(), "--log-level=*:error", "-l", "0"};
	return rte_eal_init(static_cast<int>(std::size(args)), const_cast<char **>(args));
}

} // namespace

int main(int argc, char **argv)
{
	gen_options o;
	static const option longopts[] = {
		{"out", required_argument, nullptr, 'o'},
		{"messages", required_argument, nullptr, 'n'},
		{"frames", required_argument, nullptr, 'F'},
		{"services", required_argument, nullptr, 's'},
		{"body", required_argument, nullptr, 'b'},
		{"mtu", required_argument, nullptr, 'M'},
		{"frame-size", required_argument, nullptr, 'z'},
		{"mesh-port", required_argument, nullptr, 'm'},
		{"ipv6-share", required_argument, nullptr, '6'},
		{"response-share", required_argument, nullptr, 'r'},
		{"malformed-share", required_argument, nullptr, 'x'},
		{"other-share", required_argument, nullptr, 'O'},
		{"seed", required_argument, nullptr, 'S'},
		{"header", required_argument, nullptr, 'H'},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "o:n:h", longopts, nullptr)) != -1) {
		bool ok = true;
		switch (c) {
		case 'o': o.out = optarg; break;
		case 'n': ok = parse_uint(optarg, o.messages, 10000000); break;
		case 'F': ok = parse_uint(optarg, o.frames, 100000000); break;
		case 's': {
			o.services.clear();
			std::string all = optarg;
			size_t pos = 0;
			while (pos <= all.size()) {
				size_t comma = all.find(',', pos);
				std::string s = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
				if (s.empty() || s.size() > 63)
					ok = false;
				o.services.push_back(s);
				if (comma == std::string::npos)
					break;
				pos = comma + 1;
			}
			break;
		}
		case 'b': {
			unsigned lo, hi;
			char extra;
			ok = std::sscanf(optarg, "%u:%u%c", &lo, &hi, &extra) == 2 && lo <= hi &&
			     hi <= (1u << 20);
			o.min_body = lo, o.max_body = hi;
			break;
		}
		case 'M': ok = parse_uint(optarg, o.mtu, 9600) && o.mtu >= 256; break;
		case 'z': ok = parse_uint(optarg, o.frame_size, 9614); break;
		case 'm': ok = parse_uint(optarg, o.mesh_port, 65535) && o.mesh_port > 0; break;
		case '6': ok = parse_share(optarg, o.ipv6_share); break;
		case 'r': ok = parse_share(optarg, o.response_share); break;
		case 'x': ok = parse_share(optarg, o.malformed_share); break;
		case 'O': ok = parse_share(optarg, o.other_share); break;
		case 'S': ok = parse_uint(optarg, o.seed, ~0u); break;
		case 'H': {
			std::string all = optarg;
			size_t colon = all.find(':');
			ok = colon != std::string::npos && colon > 0 && colon < 64 &&
			     all.size() - colon - 1 <= 1024;
			for (size_t i = 0; ok && i < colon; i++)
				ok = (all[i] >= 'a' && all[i] <= 'z') || (all[i] >= '0' && all[i] <= '9') ||
				     all[i] == '-' || all[i] == '_';
			if (ok)
				o.fields.emplace_back(all.substr(0, colon), all.substr(colon + 1));
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok) {
			const char *name = "?";
			for (const option *lo = longopts; lo->name; lo++)
				if (lo->val == c)
					name = lo->name;
			std::fprintf(stderr, "dpumesh-pcapgen: bad value \"%s\" for --%s\n", optarg, name);
			return 2;
		}
	}
	if (o.out.empty() || optind < argc) {
		usage(stderr);
		return 2;
	}
	if (init_eal(argv[0]) < 0) {
		std::fprintf(stderr, "dpumesh-pcapgen: EAL initialisation failed\n");
		return 1;
	}
	rte_mempool *mp = rte_pktmbuf_pool_create("pcapgen", 4095, 0, 0,
						  RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *d = pcap_dump_open(dead, o.out.c_str());
	if (!mp || !d) {
		std::fprintf(stderr, "dpumesh-pcapgen: %s: %s\n", o.out.c_str(),
			     mp ? pcap_geterr(dead) : "no mbuf pool");
		return 1;
	}

	std::mt19937 rng(o.seed);
	std::uniform_real_distribution<double> u(0, 1);
	/* each message's body starts at its own offset into one random buffer, so bodies of the
	 * same length still differ (a mix-up between messages shows in a byte-exact check) */
	std::vector<uint8_t> body(size_t(o.max_body) + 4096);
	for (auto &b : body)
		b = static_cast<uint8_t>(rng());
	const uint8_t node_mac[6] = {0x02, 0, 0, 0, 0, 0x01}, client_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
	unsigned long frames = 0, malformed = 0, other = 0, bytes = 0, valid_messages = 0;
	unsigned long requests = 0, responses = 0;
	unsigned ts = 0;
	auto dump = [&](const uint8_t *p, size_t len) {
		pcap_pkthdr h{};
		h.ts.tv_sec = ts / 1000000;
		h.ts.tv_usec = ts % 1000000;
		ts++;
		h.caplen = h.len = static_cast<bpf_u_int32>(len);
		pcap_dump(reinterpret_cast<u_char *>(d), &h, p);
		frames++;
		bytes += len;
	};
	std::vector<rte_mbuf *> out(1024);
	std::vector<uint8_t> buf;
	unsigned written_messages = 0;
	for (unsigned i = 0; i < o.messages; i++) {
		if (o.frames && frames >= o.frames)
			break;
		bool v6 = u(rng) < o.ipv6_share;
		wire::link_addr a{};
		std::memcpy(a.src_mac, client_mac, 6);
		std::memcpy(a.dst_mac, node_mac, 6);
		if (v6) {
			inet_pton(AF_INET6, "fd00:50::2", a.src.ip);
			inet_pton(AF_INET6, "fd00:50::1", a.dst.ip);
		} else {
			in_addr s, t;
			inet_pton(AF_INET, "192.168.50.2", &s);
			inet_pton(AF_INET, "192.168.50.1", &t);
			a.src = wire::endpoint::from_v4(s.s_addr, 0);
			a.dst = wire::endpoint::from_v4(t.s_addr, 0);
		}
		a.src.port = static_cast<uint16_t>(40000 + i % 1000);
		a.dst.port = static_cast<uint16_t>(o.mesh_port);
		/* log-uniform body size */
		double lo = std::log(double(o.min_body) + 1), hi = std::log(double(o.max_body) + 1);
		uint32_t blen = std::min<uint32_t>(o.max_body,
			static_cast<uint32_t>(std::exp(lo + (hi - lo) * u(rng)) - 1));
		if (o.frame_size)
			blen = 1; /* a POST with a body: its length is set below */
		bool response = u(rng) < o.response_share;
		uint8_t l7[2048];
		wire::l7_writer w(l7, sizeof(l7));
		const std::string &svc = o.services[i % o.services.size()];
		if (response)
			w.response(200);
		else
			w.request(svc, blen ? "POST" : "GET",
				  o.frame_size ? std::string("/") : "/" + svc + "/" + std::to_string(i), 1000);
		if (!response)
			for (const auto &[name, value] : o.fields)
				w.field(name, value);
		if (!o.frame_size) { /* --frame-size: the leanest header, for the smallest frames */
			w.field("x-request-id", "gen-" + std::to_string(i));
			if (blen)
				w.field("content-type", "application/octet-stream");
		}
		uint16_t l7_len = static_cast<uint16_t>(w.finish());
		if (o.frame_size) {
			/* the frame without a body, then the body that makes it frame_size bytes */
			uint16_t n0 = wire::fragment(a, response ? wire::frame_kind::response : wire::frame_kind::request,
						     i + 1, 0x1000 + i, l7, l7_len, wire::body_ref{body.data(), 0},
						     static_cast<uint16_t>(o.mtu), mp, out.data(),
						     static_cast<uint16_t>(out.size()));
			if (n0 != 1) {
				std::fprintf(stderr, "dpumesh-pcapgen: message %u: no single frame\n", i);
				return 1;
			}
			uint32_t head = out[0]->pkt_len;
			rte_pktmbuf_free(out[0]);
			blen = o.frame_size > head ? std::min<uint32_t>(o.frame_size - head, o.max_body) : 0;
		}
		uint16_t n = wire::fragment(a, response ? wire::frame_kind::response : wire::frame_kind::request,
					    i + 1, 0x1000 + i, l7, l7_len, wire::body_ref{body.data() + (i * 131u) % 4096u, blen},
					    static_cast<uint16_t>(o.mtu), mp, out.data(),
					    static_cast<uint16_t>(out.size()));
		if (n == 0) {
			std::fprintf(stderr, "dpumesh-pcapgen: message %u (%u B) does not fit\n", i, blen);
			return 1;
		}
		if (o.frames && frames + n > o.frames) {
			for (uint16_t f = 0; f < n; f++)
				rte_pktmbuf_free(out[f]);
			break;
		}
		written_messages++;
		bool bad = u(rng) < o.malformed_share;
		unsigned bad_frame = bad ? static_cast<unsigned>(rng() % n) : ~0u;
		auto how = static_cast<corruption>(rng() % static_cast<unsigned>(corruption::count));
		for (uint16_t f = 0; f < n; f++) {
			buf.resize(out[f]->pkt_len);
			const void *p = rte_pktmbuf_read(out[f], 0, out[f]->pkt_len, buf.data());
			if (p != buf.data())
				std::memcpy(buf.data(), p, buf.size());
			rte_pktmbuf_free(out[f]);
			if (f == bad_frame) {
				corrupt(buf, how, v6);
				malformed++;
			}
			dump(buf.data(), buf.size());
		}
		if (!bad) {
			valid_messages++;
			(response ? responses : requests)++;
		}
		if (u(rng) < o.other_share && (!o.frames || frames < o.frames)) {
			auto f = other_frame(rng, o.mesh_port);
			dump(f.data(), f.size());
			other++;
		}
	}
	pcap_dump_close(d);
	pcap_close(dead);
	std::printf("dpumesh-pcapgen: wrote %lu frames (%lu bytes) to %s: %u messages, %lu valid "
		    "(%lu requests, %lu responses), %lu malformed frames, %lu non-mesh frames\n",
		    frames, bytes, o.out.c_str(), written_messages, valid_messages, requests, responses,
		    malformed, other);
	std::printf("summary frames=%lu bytes=%lu messages=%u valid_messages=%lu malformed=%lu "
		    "other=%lu\n",
		    frames, bytes, written_messages, valid_messages, malformed, other);
	rte_mempool_free(mp);
	dpumesh::eal_cleanup();
	return 0;
}
