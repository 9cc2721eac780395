// SPDX-License-Identifier: BSD-3-Clause
// Reassembly of mesh messages from fragments with bounded memory, per-source caps and a
// timeout. Fragments are kept as mbufs (payload only) in offset order and become one mbuf
// chain when the message is complete: no copy of payload bytes.
#include <algorithm>
#include <cstring>
#include <string>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

#include "dpumesh/wire/frame.h"

namespace dpumesh::wire {

namespace {

struct __attribute__((packed)) msg_key {
	uint8_t ip[16];
	uint16_t port;
	uint16_t pad;
	uint32_t msg_id;
};
static_assert(sizeof(msg_key) == 24);

constexpr uint32_t nil = UINT32_MAX;

/* Each held fragment records its message offset in the mbuf's user tag. */
inline uint32_t frag_off(const rte_mbuf *m) { return m->hash.usr; }

msg_key key_of(const parsed_frame &pf)
{
	msg_key key{};
	std::memcpy(key.ip, pf.src.ip, 16);
	key.port = pf.src.port;
	key.msg_id = pf.msg_id;
	return key;
}

} // namespace

struct reassembler::slot {
	msg_key key;
	rte_mbuf *head;
	rte_mbuf *tail;
	uint64_t first_tsc;
	uint64_t correlation;
	uint32_t msg_len;
	uint32_t received;
	uint32_t nb_frags;
	uint32_t source;
	uint32_t prev, next; /* LRU (oldest first), or the free list through next */
	uint16_t l7_len;
	frame_kind kind;
	uint8_t src_mac[6];
	bool active;
	bool tomb; /* a refused message's tombstone: holds no mbufs, drops what comes */
};

reasm_config reasm_config_for_pool(uint32_t pool_mbufs, unsigned workers) noexcept
{
	reasm_config c;
	c.max_mbufs = std::max<uint32_t>(pool_mbufs / 4 / std::max(workers, 1u), 1);
	c.max_mbufs_per_source = std::max<uint32_t>(c.max_mbufs / 2, 1);
	return c;
}

result<std::unique_ptr<reassembler>> reassembler::create(const reasm_config &cfg,
							 const char *name, int socket_id)
{
	if (cfg.max_reassemblies == 0 || cfg.max_per_source == 0 || cfg.max_mbufs == 0 ||
	    cfg.max_mbufs_per_source == 0 || cfg.max_frags == 0 || cfg.timeout_ms == 0)
		return errorf("reassembler %s: every limit must be at least 1", name);
	std::unique_ptr<reassembler> r(new reassembler());
	r->_cfg = cfg;
	r->_timeout_tsc = rte_get_tsc_hz() / 1000 * cfg.timeout_ms;
	uint32_t entries = std::max<uint32_t>(cfg.max_reassemblies * 2, 64);
	std::string mname = std::string(name) + "_m";
	rte_hash_parameters hp{};
	hp.name = mname.c_str();
	hp.entries = entries;
	hp.key_len = sizeof(msg_key);
	hp.hash_func = rte_jhash;
	hp.socket_id = socket_id;
	r->_msgs = rte_hash_create(&hp);
	if (!r->_msgs)
		return errorf("reassembler %s: message table: %s", name, rte_strerror(rte_errno));
	std::string sname = std::string(name) + "_s";
	hp.name = sname.c_str();
	hp.key_len = 16;
	r->_sources = rte_hash_create(&hp);
	if (!r->_sources)
		return errorf("reassembler %s: source table: %s", name, rte_strerror(rte_errno));
	r->_source_use.reset(new source_use[entries]());
	r->_slots.reset(new slot[cfg.max_reassemblies]());
	for (uint32_t i = 0; i < cfg.max_reassemblies; i++)
		r->_slots[i].next = i + 1 < cfg.max_reassemblies ? i + 1 : nil;
	r->_free_head = 0;
	return r;
}

reassembler::~reassembler()
{
	if (_slots)
		flush();
	rte_hash_free(_msgs);
	rte_hash_free(_sources);
}

/* One message more from ip: the index of its source's use, or -1 when a new source cannot
 * be tracked. */
int32_t reassembler::source_get(const uint8_t ip[16]) noexcept
{
	int32_t pos = rte_hash_lookup(_sources, ip);
	if (pos < 0) {
		pos = rte_hash_add_key(_sources, ip);
		if (pos < 0)
			return -1;
		_source_use[pos] = {};
	}
	_source_use[pos].msgs++;
	return pos;
}

/* One message less from ip (its use at pos); the source goes with its last message, whose
 * mbufs went before it (held_sub()). */
void reassembler::source_put(uint32_t pos, const uint8_t ip[16]) noexcept
{
	if (--_source_use[pos].msgs == 0)
		rte_hash_del_key(_sources, ip);
}

/* n of the mbufs a slot holds are gone (freed, or out in its message) */
void reassembler::held_sub(slot &s, uint32_t n) noexcept
{
	_mbufs_held -= n;
	_source_use[s.source].mbufs -= n;
	s.nb_frags -= n;
}

void reassembler::release(uint32_t idx, wire_drop why) noexcept
{
	slot &s = _slots[idx];
	rte_hash_del_key(_msgs, &s.key);
	if (s.prev != nil)
		_slots[s.prev].next = s.next;
	else
		_lru_head = s.next;
	if (s.next != nil)
		_slots[s.next].prev = s.prev;
	else
		_lru_tail = s.prev;
	if (why != wire_drop::none) {
		free_frags(s);
		_stats.drops[static_cast<size_t>(why)].inc();
	}
	held_sub(s, s.nb_frags); /* 0 after free_frags; a completed chain went out whole */
	source_put(s.source, s.key.ip);
	s.head = s.tail = nullptr;
	s.active = false;
	s.tomb = false;
	s.next = _free_head;
	_free_head = idx;
	_nb_active--;
}

/* Frees the fragments a slot holds (each one by itself: they are not a chain yet). */
void reassembler::free_frags(slot &s) noexcept
{
	rte_mbuf *m = s.head;
	while (m) {
		rte_mbuf *next = m->next;
		m->next = nullptr;
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		rte_pktmbuf_free(m);
		m = next;
	}
	held_sub(s, s.nb_frags);
	s.head = s.tail = nullptr;
}

uint32_t reassembler::open_slot(const parsed_frame &pf, uint64_t now_tsc, bool holds,
				 wire_drop *why) noexcept
{
	if (_free_head == nil) {
		*why = wire_drop::table_full;
		return nil;
	}
	const int32_t pos = source_get(pf.src.ip);
	if (pos < 0) {
		*why = wire_drop::table_full;
		return nil;
	}
	const source_use &u = _source_use[pos];
	if (u.msgs > _cfg.max_per_source || (holds && u.mbufs >= _cfg.max_mbufs_per_source)) {
		source_put(static_cast<uint32_t>(pos), pf.src.ip);
		*why = wire_drop::source_limit;
		return nil;
	}
	const msg_key key = key_of(pf);
	const uint32_t idx = _free_head;
	if (rte_hash_add_key_data(_msgs, &key, reinterpret_cast<void *>(uintptr_t(idx))) < 0) {
		source_put(static_cast<uint32_t>(pos), pf.src.ip);
		*why = wire_drop::table_full;
		return nil;
	}
	slot &s = _slots[idx];
	_free_head = s.next;
	s.key = key;
	s.source = static_cast<uint32_t>(pos);
	s.head = s.tail = nullptr;
	s.first_tsc = now_tsc;
	s.correlation = pf.correlation;
	s.msg_len = pf.msg_len;
	s.received = 0;
	s.nb_frags = 0;
	s.l7_len = pf.l7_len;
	s.kind = pf.kind;
	std::memcpy(s.src_mac, pf.src_mac, 6);
	s.active = true;
	s.tomb = false;
	s.prev = _lru_tail;
	s.next = nil;
	if (_lru_tail != nil)
		_slots[_lru_tail].next = idx;
	else
		_lru_head = idx;
	_lru_tail = idx;
	_nb_active++;
	return idx;
}

reasm_refusal reassembler::refuse(rte_mbuf *m, const parsed_frame &pf, uint64_t now_tsc) noexcept
{
	_stats.fragments.inc();
	rte_pktmbuf_free(m);
	const msg_key key = key_of(pf);
	void *data;
	if (rte_hash_lookup_data(_msgs, &key, &data) >= 0) {
		const uint32_t idx = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data));
		slot &s = _slots[idx];
		if (s.tomb) {
			_stats.duplicates.inc();
			return reasm_refusal::repeat;
		}
		/* later fragments came first: they go, and the slot stays as the tombstone */
		_stats.drops[static_cast<size_t>(wire_drop::refused_frag)].add(s.nb_frags);
		free_frags(s);
		s.tomb = true;
		s.msg_len = pf.msg_len;
		s.received += pf.frag_len;
		_stats.tombstones.inc();
		if (s.received < s.msg_len)
			return reasm_refusal::tombstone;
		release(idx, wire_drop::none);
		return reasm_refusal::whole;
	}
	wire_drop why = wire_drop::none;
	const uint32_t idx = open_slot(pf, now_tsc, false, &why);
	if (idx == nil) {
		_stats.tombstone_no_room.inc();
		return reasm_refusal::no_room;
	}
	_slots[idx].tomb = true;
	_slots[idx].received = pf.frag_len;
	_stats.tombstones.inc();
	return reasm_refusal::tombstone;
}

reasm_result reassembler::input(rte_mbuf *m, const parsed_frame &pf, uint64_t now_tsc,
				message *out) noexcept
{
	_stats.fragments.inc();
	auto drop = [&](wire_drop why) {
		_stats.drops[static_cast<size_t>(why)].inc();
		rte_pktmbuf_free(m);
		return reasm_result::dropped;
	};
	/* keep only the payload, in one segment */
	if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0)
		return drop(wire_drop::memory_limit);
	if (!rte_pktmbuf_adj(m, static_cast<uint16_t>(pf.payload_off)))
		return drop(wire_drop::bad_length);
	if (m->pkt_len > pf.frag_len && rte_pktmbuf_trim(m, static_cast<uint16_t>(m->pkt_len - pf.frag_len)))
		return drop(wire_drop::bad_length);
	if (m->pkt_len != pf.frag_len)
		return drop(wire_drop::bad_length);
	m->hash.usr = pf.frag_offset;

	if (pf.frag_offset == 0 && pf.frag_len == pf.msg_len) {
		/* a whole message in one frame: nothing to hold, so no table, no per-source
		 * count and no hashing (the common case of small messages) */
		out->chain = m;
		out->src = pf.src;
		std::memcpy(out->src_mac, pf.src_mac, 6);
		out->kind = pf.kind;
		out->msg_id = pf.msg_id;
		out->msg_len = pf.msg_len;
		out->l7_len = pf.l7_len;
		out->payload_sum = pf.payload_sum;
		out->correlation = pf.correlation;
		_stats.messages.inc();
		_stats.bytes.add(pf.msg_len);
		return reasm_result::complete;
	}

	const msg_key key = key_of(pf);
	void *data;
	uint32_t idx;
	if (rte_hash_lookup_data(_msgs, &key, &data) < 0) {
		if (_free_head != nil && _mbufs_held >= _cfg.max_mbufs)
			return drop(wire_drop::memory_limit);
		wire_drop why = wire_drop::none;
		idx = open_slot(pf, now_tsc, true, &why);
		if (idx == nil)
			return drop(why);
	} else {
		idx = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data));
		slot &s = _slots[idx];
		if (s.tomb) {
			/* its message was refused at its first fragment: dropped, not held */
			s.received += pf.frag_len;
			if (s.received >= s.msg_len)
				release(idx, wire_drop::none);
			return drop(wire_drop::refused_frag);
		}
		if (s.msg_len != pf.msg_len || s.l7_len != pf.l7_len || s.kind != pf.kind ||
		    s.correlation != pf.correlation)
			return drop(wire_drop::mismatch);
		if (_mbufs_held >= _cfg.max_mbufs)
			return drop(wire_drop::memory_limit);
		if (_source_use[s.source].mbufs >= _cfg.max_mbufs_per_source)
			return drop(wire_drop::source_limit);
	}

	slot &s = _slots[idx];
	const uint32_t off = pf.frag_offset, end = off + pf.frag_len;
	/* find the insertion point: after the last fragment starting before `off` */
	rte_mbuf *prev = nullptr;
	if (s.tail && frag_off(s.tail) < off) {
		prev = s.tail; /* in-order arrival: O(1) */
	} else {
		for (rte_mbuf *it = s.head; it && frag_off(it) < off; it = it->next)
			prev = it;
	}
	rte_mbuf *next = prev ? prev->next : s.head;
	if (next && frag_off(next) == off && next->data_len == pf.frag_len) {
		_stats.duplicates.inc();
		rte_pktmbuf_free(m);
		return reasm_result::held;
	}
	if ((prev && frag_off(prev) + prev->data_len > off) || (next && end > frag_off(next))) {
		rte_pktmbuf_free(m);
		release(idx, wire_drop::overlap);
		return reasm_result::dropped;
	}
	if (s.nb_frags + 1 > _cfg.max_frags) {
		rte_pktmbuf_free(m);
		release(idx, wire_drop::too_many_frags);
		return reasm_result::dropped;
	}
	m->next = next;
	if (prev)
		prev->next = m;
	else
		s.head = m;
	if (!next)
		s.tail = m;
	s.nb_frags++;
	_mbufs_held++;
	_source_use[s.source].mbufs++;
	s.received += pf.frag_len;
	if (s.received != s.msg_len)
		return reasm_result::held;

	/* complete: fragments cover [0, msg_len) without overlap, so they are contiguous */
	rte_mbuf *head = s.head;
	head->nb_segs = static_cast<uint16_t>(std::min<uint32_t>(s.nb_frags, UINT16_MAX));
	head->pkt_len = s.msg_len;
	out->chain = head;
	out->src = pf.src;
	std::memcpy(out->src_mac, s.src_mac, 6);
	out->kind = s.kind;
	out->msg_id = s.key.msg_id;
	out->msg_len = s.msg_len;
	out->l7_len = s.l7_len;
	out->payload_sum = 0; /* of several frames: not taken */
	out->correlation = s.correlation;
	s.head = nullptr;
	release(idx, wire_drop::none);
	_stats.messages.inc();
	_stats.bytes.add(out->msg_len);
	return reasm_result::complete;
}

uint32_t reassembler::expire(uint64_t now_tsc, expired_request *out, uint32_t max,
			     uint32_t *nb_out) noexcept
{
	uint32_t n = 0, k = 0;
	while (_lru_head != nil && now_tsc - _slots[_lru_head].first_tsc > _timeout_tsc) {
		const slot &s = _slots[_lru_head];
		/* a request that still can be answered: its first fragment is here */
		if (out && !s.tomb && s.kind == frame_kind::request && s.head &&
		    frag_off(s.head) == 0) {
			if (k == max)
				break; /* the next sweep */
			expired_request &e = out[k++];
			e.msg = {};
			std::memcpy(e.msg.src.ip, s.key.ip, 16);
			e.msg.src.port = s.key.port;
			std::memcpy(e.msg.src_mac, s.src_mac, 6);
			e.msg.kind = s.kind;
			e.msg.msg_id = s.key.msg_id;
			e.msg.msg_len = s.msg_len;
			e.msg.l7_len = s.l7_len;
			e.msg.correlation = s.correlation;
			e.port = s.head->port;
		}
		/* a tombstone's message was answered (its refusal): nothing is lost with it */
		release(_lru_head, s.tomb ? wire_drop::none : wire_drop::timeout);
		n++;
	}
	if (nb_out)
		*nb_out = k;
	return n;
}

void reassembler::flush() noexcept
{
	while (_lru_head != nil)
		release(_lru_head, _slots[_lru_head].tomb ? wire_drop::none : wire_drop::timeout);
}

} // namespace dpumesh::wire
