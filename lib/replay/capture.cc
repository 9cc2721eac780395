// SPDX-License-Identifier: BSD-3-Clause
// Loading captures with libpcap and classifying their frames for answer matching.
#include "dpumesh/replay/capture.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstring>
#include <map>
#include <tuple>

#include "dpumesh/wire/frame_hdr.h"
#include "internal/headers.h"

namespace dpumesh::replay {

namespace {

using internal::be16;
using internal::l4_view;
using internal::proto_tcp;
using internal::proto_udp;
using internal::v4_mapped;
l4_view parse(const uint8_t *f, uint32_t len) { return internal::walk(f, len); }

using msg_key = std::tuple<std::array<uint8_t, 16>, uint16_t, uint32_t>;

struct open_msg {
	std::vector<uint32_t> frames; /* indexes into capture::frames */
	uint32_t msg_len = 0, seen = 0;
	uint64_t correlation = 0;
	bool bad = false;
	bool has_l7 = false;
};

result<std::vector<std::array<uint8_t, 16>>> parse_ips(const std::vector<std::string> &ips)
{
	std::vector<std::array<uint8_t, 16>> out;
	for (const auto &s : ips) {
		std::array<uint8_t, 16> a{};
		uint8_t v4[4];
		if (inet_pton(AF_INET, s.c_str(), v4) == 1)
			v4_mapped(v4, a.data());
		else if (inet_pton(AF_INET6, s.c_str(), a.data()) != 1)
			return errorf("\"%s\" is not an IPv4 or IPv6 address", s.c_str());
		out.push_back(a);
	}
	return out;
}

} // namespace

result<capture> load_captures(const std::vector<std::string> &files, const capture_options &o)
{
	if (files.empty())
		return errorf("no capture given");
	DPUMESH_ASSIGN_OR_RETURN(auto dut, parse_ips(o.dut_ips));
	capture cap;
	const uint64_t max_bytes = std::min<uint64_t>(o.max_bytes, UINT32_MAX); /* the offsets */
	uint64_t base_ns = 0;
	for (const auto &file : files) {
		char err[PCAP_ERRBUF_SIZE] = "";
		pcap_t *p = pcap_open_offline_with_tstamp_precision(file.c_str(),
								   PCAP_TSTAMP_PRECISION_NANO, err);
		if (!p)
			return errorf("%s: %s", file.c_str(), err);
		if (int dlt = pcap_datalink(p); dlt != DLT_EN10MB) {
			pcap_close(p);
			return errorf("%s: link type %d is not Ethernet", file.c_str(), dlt);
		}
		std::map<msg_key, open_msg> open;
		pcap_pkthdr *h;
		const u_char *data;
		int rc;
		uint64_t first_ns = 0, last_ns = 0;
		size_t first_frame = cap.frames.size();
		size_t frame_no = 0; /* in this file, from 1, skipped ones included */
		while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
			frame_no++;
			uint64_t ns = uint64_t(h->ts.tv_sec) * 1000000000ull + uint64_t(h->ts.tv_usec);
			if (h->caplen != h->len || h->caplen > o.max_frame || h->caplen < 14) {
				cap.nb_skipped_large++;
				continue;
			}
			if (h->caplen > max_bytes - cap.bytes.size()) { /* bytes.size() <= max_bytes */
				pcap_close(p);
				return errorf("%s: frame %zu: the captures' frames come to more than %" PRIu64
					      " bytes, more than the generator holds in memory; give a "
					      "shorter capture",
					      file.c_str(), frame_no, max_bytes);
			}
			if (cap.frames.size() == first_frame)
				first_ns = ns;
			last_ns = std::max(last_ns, ns);
			frame_info fi;
			fi.offset = uint32_t(cap.bytes.size());
			fi.len = uint16_t(h->caplen);
			fi.ts_ns = base_ns + (ns >= first_ns ? ns - first_ns : 0);
			cap.bytes.insert(cap.bytes.end(), data, data + h->caplen);
			cap.nb_bytes += h->caplen;
			const uint8_t *f = cap.bytes.data() + fi.offset;
			l4_view v = parse(f, fi.len);
			uint32_t idx = uint32_t(cap.frames.size());
			if (o.match == match_mode::frame) {
				uint32_t hdr_end = v.ip ? v.l4 + (v.proto == proto_tcp ? 20u : 8u) : 14u;
				if (fi.len >= 64 && fi.len - 8u >= hdr_end) {
					fi.msg = int32_t(cap.nb_messages++);
					fi.last = 1;
					fi.tag_offset = uint16_t(fi.len - 8);
					bool tag_in_l4 = v.ip && fi.len - 8u < v.l4 + v.l4_len;
					if (tag_in_l4 && (v.proto == proto_udp || v.proto == proto_tcp)) {
						uint16_t co = uint16_t(v.l4 + (v.proto == proto_udp ? 6 : 16));
						if (v.v6 || v.proto == proto_tcp || be16(f + co) != 0) {
							fi.csum_offset = co;
							fi.csum_full = 1;
							fi.is_ipv6 = v.v6;
							fi.l3_offset = v.l3;
						}
					}
				}
				cap.frames.push_back(fi);
				continue;
			}
			cap.frames.push_back(fi);
			/* mesh: a request fragment to one of the device's addresses */
			if (!v.ip || v.proto != proto_udp || v.l4_len < 8 + wire::frame_hdr_size)
				continue;
			if (!dut.empty()) {
				bool mine = false;
				for (const auto &a : dut)
					mine |= std::memcmp(a.data(), v.dst, 16) == 0;
				if (!mine)
					continue;
			}
			const uint8_t *fh = f + v.l4 + 8;
			uint32_t frag_len = v.l4_len - 8 - uint32_t(wire::frame_hdr_size);
			wire::frag_fields ff;
			if (wire::decode_frag_hdr(fh, frag_len, 16u << 20, &ff) != wire::wire_drop::none ||
			    ff.kind != wire::frame_kind::request)
				continue;
			std::array<uint8_t, 16> src;
			std::memcpy(src.data(), v.src, 16);
			msg_key k{src, be16(f + v.l4), ff.msg_id};
			auto &m = open[k];
			if (m.frames.empty()) {
				m.msg_len = ff.msg_len;
				m.correlation = ff.correlation;
			} else if (m.msg_len != ff.msg_len || m.correlation != ff.correlation) {
				m.bad = true;
			}
			if (ff.frag_offset == 0)
				m.has_l7 = frag_len >= 2 && fh[32] == 'D' && fh[33] == 'M';
			m.frames.push_back(idx);
			m.seen += frag_len;
			if (m.seen >= m.msg_len) {
				if (!m.bad && m.seen == m.msg_len && m.has_l7) {
					int32_t msg = int32_t(cap.nb_messages++);
					cap.frames[m.frames.back()].last = 1;
					for (uint32_t i : m.frames) {
						frame_info &g = cap.frames[i];
						const uint8_t *gf = cap.bytes.data() + g.offset;
						l4_view gv = parse(gf, g.len);
						g.msg = msg;
						g.tag_offset = uint16_t(gv.l4 + 8 + 20);
						g.msgid_offset = uint16_t(gv.l4 + 8 + 4);
						bool csum = gv.v6 || be16(gf + gv.l4 + 6) != 0;
						g.csum_offset = csum ? uint16_t(gv.l4 + 6) : 0;
						g.is_ipv6 = gv.v6;
						g.l3_offset = gv.l3;
					}
				}
				open.erase(k);
			}
		}
		if (rc == -1) {
			std::string e = pcap_geterr(p);
			pcap_close(p);
			return errorf("%s: %s", file.c_str(), e.c_str());
		}
		pcap_close(p);
		size_t n = cap.frames.size() - first_frame;
		if (n == 0)
			return errorf("%s: no frame to replay (empty, or every frame over %u bytes)",
				      file.c_str(), unsigned(o.max_frame));
		uint64_t span = last_ns - first_ns;
		uint64_t gap = n > 1 ? span / (n - 1) : 1000000; /* one frame: 1 ms per pass */
		base_ns += span + (gap ? gap : 1);
	}
	cap.span_ns = base_ns;
	for (const auto &f : cap.frames)
		cap.nb_untracked += f.msg < 0;
	return cap;
}

} // namespace dpumesh::replay
