// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: dpumesh-replay's capture loader (libpcap + frame classification, both modes).
//
// The input is a pcap file. Its frames go through the same header walk the generator uses
// on the frames a device under test sends back (lib/replay/internal/headers.h), and the mesh
// grouping of fragments into messages, and the walk that picks a frame's queue
// (flow_queue(), dpumesh-replay --queues). Checks: no crash or leak, and the classification's
// invariants (tags and checksums inside their frame, message indexes in range, a queue in
// range for the whole frame and for it cut to half its length).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dpumesh/replay/capture.h"
#include "dpumesh/replay/generator.h"

using namespace dpumesh::replay;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("replay_capture_fuzz", 0);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != ssize_t(size)) {
		close(fd);
		return 0;
	}
	std::string path = "/proc/self/fd/" + std::to_string(fd);
	for (match_mode m : {match_mode::mesh, match_mode::frame}) {
		capture_options o;
		o.match = m;
		if (m == match_mode::mesh)
			o.dut_ips = {"192.168.50.1", "fd00:50::1"};
		auto c = load_captures({path}, o);
		if (!c)
			continue;
		uint32_t tracked_last = 0;
		for (const auto &f : c->frames) {
			if (f.offset + f.len > c->bytes.size())
				std::abort();
			const uint8_t *frame = c->bytes.data() + f.offset;
			if (flow_queue(frame, f.len, 4) >= 4 || flow_queue(frame, f.len / 2, 3) >= 3)
				std::abort();
			if (f.msg >= 0) {
				if (uint32_t(f.msg) >= c->nb_messages || f.tag_offset + 8u > f.len)
					std::abort();
				if (f.csum_offset && f.csum_offset + 2u > f.len)
					std::abort();
				tracked_last += f.last;
			}
		}
		if (tracked_last != c->nb_messages)
			std::abort(); /* every tracked message has exactly one last frame */
	}
	close(fd);
	return 0;
}
