// SPDX-License-Identifier: BSD-3-Clause
// The request table: pending entries with the sidecar's typed context, and their expiry.
#include "internal/request_table.h"

#include "internal/admission.h" /* open_request.h's verdict */
#include "internal/open_request.h"
#include "internal/quota.h"

namespace dpumesh::sidecar {

namespace {
uint32_t shard_capacity(uint32_t capacity, unsigned nb_shards) noexcept
{
	const uint32_t most = 65536u >> request_table::shard_bits(nb_shards);
	return capacity < most ? capacity : most;
}
} // namespace

request_table::request_table(uint32_t capacity, uint64_t tsc_hz, unsigned shard, unsigned nb_shards)
	: _t(shard_capacity(capacity, nb_shards), tsc_hz),
	  _ctx(make_huge_array<request_ctx>(_t.capacity())), _tsc_hz(tsc_hz)
{
	const unsigned bits = shard_bits(nb_shards);
	if (bits) {
		_shard_base = uint32_t(shard) << (16 - bits);
		_shard_mask = ((1u << bits) - 1) << (16 - bits);
	}
}

/* An entry made aside, copied into its slot (open_written(): internal/open_request.h). */
uint32_t request_table::open(const pending::entry &e, const opening &o) noexcept
{
	pending::entry *to = _t.next_entry();
	if (!to)
		return 0;
	*to = e;
	return open_written(o);
}

request_table::ref request_table::find(uint32_t token) noexcept
{
	if (!ours(token))
		return ref();
	token = inner(token);
	pending::entry *e = _t.find(token);
	return e ? ref(e, &_ctx[token & 0xffff]) : ref();
}

request_table::ref request_table::match(uint32_t token, const pending::party &responder,
					uint32_t step_id) noexcept
{
	if (!ours(token))
		return ref();
	token = inner(token);
	pending::entry *e = _t.match(token, responder, step_id);
	return e ? ref(e, &_ctx[token & 0xffff]) : ref();
}

void request_table::close(uint32_t token) noexcept
{
	if (!ours(token))
		return;
	token = inner(token);
	if (const pending::entry *e = _t.find(token)) {
		if (_quota)
			_quota->release(*e, _ctx[token & 0xffff]);
		unload(_ctx[token & 0xffff]); /* the next open() writes the rest */
	}
	_t.remove(token);
}

uint32_t request_table::expire(uint64_t now, expiry *out, uint32_t max) noexcept
{
	/* the walk with and without a quota: its test an expiry was ~2 instructions */
	quota *const q = _quota; /* in a register: the walk's stores may alias the member */
	return q ? expire_walk<true>(now, out, max, q) : expire_walk<false>(now, out, max, nullptr);
}

template <bool with_quota>
uint32_t request_table::expire_walk(uint64_t now, expiry *out, uint32_t max, quota *q) noexcept
{
	expiry *next = out; /* a cursor, not out[n++]: no index to multiply by 24 */
	request_ctx *const ctx = _ctx.get();
	return _t.expire(now, [&](uint32_t token, pending::entry &e) {
		request_ctx &c = ctx[token & 0xffff];
		expiry &x = *next++;
		/* a plain() one's kind, stored with the rest (the flags tested one at a time, then
		 * the kind stored, were ~4 instructions more an expiry) */
		x.what = expiry::kind::timeout;
		x.entry = &e;
		x.ctx = &c;
		if (!c.plain()) [[unlikely]] {
			if (c.ended) { /* the DPA never reported the delivery: the table lets go */
				x.what = expiry::kind::lost;
			} else if (c.in_flight) { /* its buffers are in use until the DPA reports */
				x.what = expiry::kind::timeout_in_flight;
				c.ended = true;
				_t.rearm(token, now + in_flight_grace_s * _tsc_hz);
				return false; /* re-armed: the table keeps it */
			} else {
				x.what = expiry::kind::timeout_held;
			}
		}
		/* what it held, given back: the table removes it and leaves its bytes as they
		 * are, which the expiry reads; the next open() writes the whole context (and
		 * nothing reads a free slot's: for_each, find and match see live ones only) */
		if constexpr (with_quota)
			q->release(e, c);
		unload(c);
		return true;
	}, max, [&](uint32_t slot) {
		__builtin_prefetch(&ctx[slot]); /* its first line: all an expiry reads */
	});
}

} // namespace dpumesh::sidecar
