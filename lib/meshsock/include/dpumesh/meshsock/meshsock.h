// SPDX-License-Identifier: BSD-3-Clause
// The mesh wire protocol on plain UDP sockets, without DPDK: fragmenting, sending, receiving
// and a bounded reassembler for programs outside the node (the ingress gateway, tests).
//
// The format is docs/wire.md §2; the fragment header and its checks are shared with the
// node (dpumesh/wire/frame_hdr.h). The node's own reassembler holds mbufs; this one holds one
// contiguous buffer per message, bounded in count, per source, in bytes and in time.
//
//   meshsock::out_message m{wire::frame_kind::request, ++msg_id, corr, l7, body};
//   if (int rc = meshsock::send_message(fd, to, tolen, m, meshsock::slice_for_mtu(1500, false)))
//     fail(rc);
//   meshsock::reassembler r(meshsock::reasm_limits{});
//   meshsock::receiver rx;
//   rx.only_from({meshsock::endpoint_of(node_addr)});  // others dropped before reassembly
//   std::vector<meshsock::message> done;
//   rx.drain(fd, r, now_ms(), &done);  // whole messages, any fragment order
//   r.expire(now_ms());                 // drop what did not complete in time
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "dpumesh/wire/frame_hdr.h"

namespace dpumesh::meshsock {

/** A message to send: L7 header bytes and body bytes, used in place. */
struct out_message {
	wire::frame_kind kind = wire::frame_kind::request;
	uint32_t msg_id = 0;
	uint64_t correlation = 0;
	std::span<const uint8_t> l7;
	std::span<const uint8_t> body;
};

/** Message bytes per datagram for an IP MTU (IP, UDP and fragment headers taken off). */
uint32_t slice_for_mtu(uint32_t mtu, bool v6) noexcept;

/**
 * Splits a message into datagrams without copying: datagram i is the 32-byte fragment
 * header plus up to two iovecs into the caller's l7 and body.
 */
class fragmenter {
public:
	/** max_slice: message bytes per datagram (>= 1). */
	fragmenter(const out_message &m, uint32_t max_slice) noexcept;
	/** Datagrams needed; 0 if the message cannot be sent (l7 < 16 B or > 64 KiB, too long). */
	uint32_t count() const noexcept { return _count; }
	/**
	 * Fills hdr (32 bytes) and iov (hdr first); returns the number of iovecs (2 or 3).
	 * @param i datagram index, < count()
	 */
	int datagram(uint32_t i, uint8_t *hdr, iovec *iov) const noexcept;

private:
	out_message _m;
	uint32_t _slice;
	uint32_t _msg_len = 0;
	uint32_t _count = 0;
};

/**
 * Sends a whole message on a UDP socket (sendmmsg in batches). A non-blocking socket whose
 * send buffer is full is waited on with poll() for at most wait_ms per batch.
 * @return 0; -EMSGSIZE (message not sendable); -ETIMEDOUT (socket stayed full); -errno
 */
int send_message(int fd, const sockaddr *to, socklen_t tolen, const out_message &m,
		 uint32_t max_slice, int wait_ms = 200) noexcept;

struct reasm_limits {
	uint32_t max_message = 16u << 20;  /**< bytes of L7 header + body */
	uint32_t max_in_flight = 1024;     /**< messages being reassembled */
	uint32_t max_per_source = 256;     /**< per source IP */
	uint64_t max_bytes = 64ull << 20;  /**< buffer bytes held across all (msg_len each) */
	uint32_t max_frags = 16384;        /**< fragments per message */
	uint32_t timeout_ms = 1000;        /**< first fragment -> complete */
};

/** A whole message: data holds L7 header (l7_len bytes) then the body. */
struct message {
	wire::endpoint src;
	wire::frame_kind kind = wire::frame_kind::request;
	uint32_t msg_id = 0;
	uint16_t l7_len = 0;
	uint64_t correlation = 0;
	std::vector<uint8_t> data;
	std::span<const uint8_t> l7() const noexcept { return {data.data(), l7_len}; }
	std::span<const uint8_t> body() const noexcept
	{
		return {data.data() + l7_len, data.size() - l7_len};
	}
};

enum class reasm_result { complete, held, dropped };

struct reasm_stats {
	uint64_t datagrams = 0, messages = 0, bytes = 0, duplicates = 0;
	std::array<uint64_t, static_cast<size_t>(wire::wire_drop::count)> drops{};
};

/**
 * Reassembles datagrams into messages. Memory is bounded by max_in_flight, max_per_source
 * and max_bytes; a message's buffer is taken whole at its first fragment (so a lying
 * msg_len costs its sender budget, not memory beyond max_bytes). Exact duplicates are
 * ignored, overlaps drop the message, a fragment that disagrees with its message is
 * dropped alone (the rules of the node's reassembler, docs/wire.md). Not thread-safe.
 */
class reassembler {
public:
	explicit reassembler(const reasm_limits &limits);

	/**
	 * One datagram (fragment header + slice) from src at time now_ms.
	 * @return complete (*out holds the message), held, or dropped (*why says why)
	 */
	reasm_result input(const wire::endpoint &src, const uint8_t *dgram, size_t len,
			   uint64_t now_ms, message *out, wire::wire_drop *why = nullptr);

	/** Drops messages older than the timeout; returns how many. */
	uint32_t expire(uint64_t now_ms);

	uint32_t in_flight() const noexcept { return static_cast<uint32_t>(_msgs.size()); }
	uint64_t bytes_held() const noexcept { return _bytes; }
	const reasm_stats &stats() const noexcept { return _stats; }
	const reasm_limits &limits() const noexcept { return _lim; }

private:
	struct key {
		std::array<uint8_t, 16> ip;
		uint16_t port;
		uint32_t msg_id;
		bool operator==(const key &) const noexcept = default;
	};
	struct key_hash {
		size_t operator()(const key &k) const noexcept;
	};
	struct ip_hash {
		size_t operator()(const std::array<uint8_t, 16> &ip) const noexcept;
	};
	struct entry {
		wire::frag_fields first;          /**< fields every fragment must repeat */
		std::vector<uint8_t> data;        /**< msg_len bytes */
		std::map<uint32_t, uint32_t> got; /**< offset -> length of each slice held */
		uint32_t received = 0;
		uint64_t started_ms = 0;
		std::list<key>::iterator age;     /**< position in _ages (oldest first) */
	};
	reasm_result drop(wire::wire_drop d, wire::wire_drop *why) noexcept;
	void release(std::unordered_map<key, entry, key_hash>::iterator it);

	reasm_limits _lim;
	std::unordered_map<key, entry, key_hash> _msgs;
	std::unordered_map<std::array<uint8_t, 16>, uint32_t, ip_hash> _per_source;
	std::list<key> _ages;
	uint64_t _bytes = 0;
	reasm_stats _stats;
};

/** Converts a socket address (IPv4 or IPv6) to an endpoint. */
wire::endpoint endpoint_of(const sockaddr_storage &sa) noexcept;

/**
 * Receives datagrams with recvmmsg into reusable buffers. Given the sources it may take
 * (only_from), it drops the others before the reassembler: a sender that may not answer
 * cannot take the reassembler's budget (a first fragment holds its message's whole msg_len
 * until the time-out) from those that may.
 */
class receiver {
public:
	explicit receiver(unsigned batch = 32);
	/**
	 * Takes datagrams only from these endpoints (address and port), dropping the rest
	 * before the reassembler, counted in foreign(). Empty, as at first: from anyone.
	 */
	void only_from(std::vector<wire::endpoint> sources);
	/**
	 * Reads every datagram waiting on a non-blocking fd, feeds r, appends the completed
	 * messages to *out. @return datagrams read (foreign ones too), or -errno on a socket
	 * error
	 */
	int drain(int fd, reassembler &r, uint64_t now_ms, std::vector<message> *out);
	/** Datagrams dropped for their source (only_from). */
	uint64_t foreign() const noexcept { return _foreign; }

private:
	unsigned _batch;
	std::unique_ptr<uint8_t[]> _bufs;
	std::vector<iovec> _iov;
	std::vector<mmsghdr> _hdrs;
	std::vector<sockaddr_storage> _addrs;
	std::vector<wire::endpoint> _sources; /* sorted (before()); empty: any */
	uint64_t _foreign = 0;
};

} // namespace dpumesh::meshsock
