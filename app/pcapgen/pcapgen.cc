// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-pcapgen: writes a capture of UDP frames to the mesh port (IPv4 and IPv6), with a
// share of non-mesh frames, for replay through a net_pcap port.
#include <arpa/inet.h>
#include <getopt.h>
#include <pcap/pcap.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

namespace {

struct gen_options {
	std::string out;
	unsigned count = 1000;
	unsigned payload = 256;
	unsigned mesh_port = 7000;
	double ipv6_share = 0.25;
	double other_share = 0.0; /* frames that are not mesh traffic (other UDP port, TCP) */
	unsigned seed = 1;
};

void usage(FILE *f)
{
	std::fputs("Usage: dpumesh-pcapgen --out FILE [--count N] [--payload BYTES]\n"
		   "         [--mesh-port PORT] [--ipv6-share 0..1] [--other-share 0..1] [--seed N]\n"
		   "Writes N Ethernet frames carrying UDP datagrams to the mesh port.\n",
		   f);
}

bool parse_double01(const char *s, double &out)
{
	char *end;
	out = std::strtod(s, &end);
	return *s && !*end && out >= 0 && out <= 1;
}

bool parse_uint(const char *s, unsigned &out, unsigned max)
{
	char *end;
	unsigned long v = std::strtoul(s, &end, 10);
	if (!*s || *end || s[0] == '-' || v > max)
		return false;
	out = static_cast<unsigned>(v);
	return true;
}

std::vector<uint8_t> build_frame(bool v6, bool mesh, unsigned payload, unsigned mesh_port,
				 unsigned seq)
{
	size_t l3 = v6 ? sizeof(rte_ipv6_hdr) : sizeof(rte_ipv4_hdr);
	std::vector<uint8_t> f(sizeof(rte_ether_hdr) + l3 + sizeof(rte_udp_hdr) + payload);
	auto *eth = reinterpret_cast<rte_ether_hdr *>(f.data());
	const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x01}, src[6] = {0x02, 0, 0, 0, 0, 0x02};
	std::memcpy(eth->dst_addr.addr_bytes, dst, 6);
	std::memcpy(eth->src_addr.addr_bytes, src, 6);
	uint16_t udp_len = static_cast<uint16_t>(sizeof(rte_udp_hdr) + payload);
	uint8_t *l4 = f.data() + sizeof(rte_ether_hdr) + l3;
	if (v6) {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
		auto *ip = reinterpret_cast<rte_ipv6_hdr *>(eth + 1);
		ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
		ip->payload_len = rte_cpu_to_be_16(udp_len);
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = 64;
		inet_pton(AF_INET6, "fd00:50::2", ip->src_addr);
		inet_pton(AF_INET6, "fd00:50::1", ip->dst_addr);
	} else {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		auto *ip = reinterpret_cast<rte_ipv4_hdr *>(eth + 1);
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(sizeof(*ip) + udp_len));
		ip->packet_id = rte_cpu_to_be_16(static_cast<uint16_t>(seq));
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		inet_pton(AF_INET, "192.168.50.2", &ip->src_addr);
		inet_pton(AF_INET, "192.168.50.1", &ip->dst_addr);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	auto *udp = reinterpret_cast<rte_udp_hdr *>(l4);
	udp->src_port = rte_cpu_to_be_16(40000 + seq % 1000);
	udp->dst_port = rte_cpu_to_be_16(static_cast<uint16_t>(mesh ? mesh_port : mesh_port + 1));
	udp->dgram_len = rte_cpu_to_be_16(udp_len);
	for (unsigned i = 0; i < payload; i++)
		l4[sizeof(rte_udp_hdr) + i] = static_cast<uint8_t>(seq + i);
	return f;
}

} // namespace

int main(int argc, char **argv)
{
	gen_options o;
	static const option longopts[] = {
		{"out", required_argument, nullptr, 'o'},
		{"count", required_argument, nullptr, 'n'},
		{"payload", required_argument, nullptr, 'p'},
		{"mesh-port", required_argument, nullptr, 'm'},
		{"ipv6-share", required_argument, nullptr, '6'},
		{"other-share", required_argument, nullptr, 'x'},
		{"seed", required_argument, nullptr, 's'},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "o:n:p:h", longopts, nullptr)) != -1) {
		bool ok = true;
		switch (c) {
		case 'o': o.out = optarg; break;
		case 'n': ok = parse_uint(optarg, o.count, 100000000); break;
		case 'p': ok = parse_uint(optarg, o.payload, 1472 - 40); break;
		case 'm': ok = parse_uint(optarg, o.mesh_port, 65534) && o.mesh_port > 0; break;
		case '6': ok = parse_double01(optarg, o.ipv6_share); break;
		case 'x': ok = parse_double01(optarg, o.other_share); break;
		case 's': ok = parse_uint(optarg, o.seed, ~0u); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok) {
			const char *name = "?";
			for (const option *lo = longopts; lo->name; lo++)
				if (lo->val == c)
					name = lo->name;
			std::fprintf(stderr, "dpumesh-pcapgen: bad value \"%s\" for --%s\n", optarg,
				     name);
			return 2;
		}
	}
	if (o.out.empty()) {
		usage(stderr);
		return 2;
	}
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *d = pcap_dump_open(dead, o.out.c_str());
	if (!d) {
		std::fprintf(stderr, "dpumesh-pcapgen: %s: %s\n", o.out.c_str(), pcap_geterr(dead));
		pcap_close(dead);
		return 1;
	}
	std::mt19937 rng(o.seed);
	std::uniform_real_distribution<double> u(0, 1);
	unsigned mesh = 0;
	for (unsigned i = 0; i < o.count; i++) {
		bool v6 = u(rng) < o.ipv6_share;
		bool is_mesh = !(u(rng) < o.other_share);
		mesh += is_mesh;
		std::vector<uint8_t> f = build_frame(v6, is_mesh, o.payload, o.mesh_port, i);
		pcap_pkthdr h{};
		h.ts.tv_sec = i / 1000000;
		h.ts.tv_usec = i % 1000000;
		h.caplen = h.len = static_cast<bpf_u_int32>(f.size());
		pcap_dump(reinterpret_cast<u_char *>(d), &h, f.data());
	}
	pcap_dump_close(d);
	pcap_close(dead);
	std::printf("dpumesh-pcapgen: wrote %u frames (%u mesh, %u other) to %s\n", o.count, mesh,
		    o.count - mesh, o.out.c_str());
	return 0;
}
