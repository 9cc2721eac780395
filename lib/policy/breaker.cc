// SPDX-License-Identifier: BSD-3-Clause
// Circuit breaker state machine: consecutive failures and a windowed error rate.
#include "dpumesh/policy/breaker.h"

namespace dpumesh::policy {

const char *breaker_state_name(breaker_state s) noexcept
{
	switch (s) {
	case breaker_state::closed: return "closed";
	case breaker_state::open: return "open";
	case breaker_state::half_open: return "half_open";
	}
	return "?";
}

circuit_breaker::circuit_breaker(const schema::breaker_config &c) noexcept
    : _max_consecutive(c.consecutive_failures ? c.consecutive_failures : 1),
      _rate_percent(c.error_rate_percent),
      _min_requests(c.min_requests ? c.min_requests : 1),
      _sub_ns(uint64_t(c.window_ms ? c.window_ms : 10) * 1000000 / nb_windows),
      _open_ns(uint64_t(c.open_ms ? c.open_ms : 1) * 1000000),
      _probes(c.half_open_probes ? c.half_open_probes : 1)
{
}

circuit_breaker::circuit_breaker(const circuit_breaker &o) noexcept
    : _max_consecutive(o._max_consecutive), _rate_percent(o._rate_percent),
      _min_requests(o._min_requests), _sub_ns(o._sub_ns), _open_ns(o._open_ns),
      _probes(o._probes), _state(o.state()), _opened(o.opened()), _open_until(o._open_until),
      _consecutive(o._consecutive), _probes_sent(o._probes_sent), _probes_ok(o._probes_ok)
{
	for (unsigned i = 0; i < nb_windows; i++)
		_w[i] = o._w[i];
}

void circuit_breaker::open(uint64_t now_ns) noexcept
{
	_state.store(breaker_state::open, std::memory_order_relaxed);
	_opened.store(_opened.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	_open_until = now_ns + _open_ns;
	_consecutive = 0;
	_probes_sent = _probes_ok = 0;
	for (auto &w : _w)
		w = {};
}

void circuit_breaker::close() noexcept
{
	_state.store(breaker_state::closed, std::memory_order_relaxed);
	_consecutive = 0;
	_probes_sent = _probes_ok = 0;
	for (auto &w : _w)
		w = {};
}

bool circuit_breaker::admit(uint64_t now_ns) noexcept
{
	switch (_state.load(std::memory_order_relaxed)) {
	case breaker_state::closed:
		return true;
	case breaker_state::open:
		if (now_ns < _open_until)
			return false;
		_state.store(breaker_state::half_open, std::memory_order_relaxed);
		_probes_sent = _probes_ok = 0;
		_open_until = now_ns + _open_ns; /* probes re-armed if still unresolved by then */
		break;
	case breaker_state::half_open:
		if (now_ns >= _open_until) {
			_probes_sent = _probes_ok = 0;
			_open_until = now_ns + _open_ns;
		}
		break;
	}
	if (_probes_sent >= _probes)
		return false;
	_probes_sent++;
	return true;
}

void circuit_breaker::record(bool failure, uint64_t now_ns) noexcept
{
	switch (_state.load(std::memory_order_relaxed)) {
	case breaker_state::open:
		return;
	case breaker_state::half_open:
		if (failure)
			open(now_ns);
		else if (++_probes_ok >= _probes)
			close();
		return;
	case breaker_state::closed:
		break;
	}
	const uint64_t epoch = now_ns / _sub_ns + 1;
	window &cur = _w[epoch % nb_windows];
	if (cur.epoch != epoch)
		cur = {epoch, 0, 0};
	cur.total++;
	if (failure) {
		cur.failures++;
		if (++_consecutive >= _max_consecutive)
			return open(now_ns);
	} else {
		_consecutive = 0;
		return;
	}
	uint64_t total = 0, failures = 0;
	for (const auto &w : _w)
		if (w.epoch != 0 && w.epoch + nb_windows > epoch) {
			total += w.total;
			failures += w.failures;
		}
	if (total >= _min_requests && failures * 100 >= uint64_t(_rate_percent) * total)
		open(now_ns);
}

} // namespace dpumesh::policy
