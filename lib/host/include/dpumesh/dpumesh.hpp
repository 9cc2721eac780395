// SPDX-License-Identifier: BSD-3-Clause
// C++20 RAII layer over libdpumesh (dpumesh/host/dpumesh.h): the pod handle closes itself and a
// received message releases its RX slots when it goes out of scope.
//
//   auto pod = dpumesh::pod::open(opts);            // throws nothing: check pod.error()
//   dpumesh::received_msg m(pod.get(), raw);        // in a callback: released by RAII
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "dpumesh/host/dpumesh.h"

namespace dpumesh {

class pod {
public:
	/** Registers; on failure get() is nullptr and error()/rc() say why. */
	static pod open(const dpumesh_options &o)
	{
		pod p;
		char err[256] = {};
		dpumesh_t *h = nullptr;
		p._rc = dpumesh_open(&o, &h, err, sizeof(err));
		p._h.reset(h);
		p._error = err;
		return p;
	}
	dpumesh_t *get() const noexcept { return _h.get(); }
	explicit operator bool() const noexcept { return _h != nullptr; }
	int rc() const noexcept { return _rc; }
	const std::string &error() const noexcept { return _error; }
	/** dpumesh_fd(); -1 for a pod whose open failed. */
	int fd() const noexcept { return _h ? dpumesh_fd(_h.get()) : -1; }
	/** dpumesh_node_fd(): readable when the node closes the pod's channel; -1 if unknown
	 * (or the open failed). */
	int node_fd() const noexcept { return _h ? dpumesh_node_fd(_h.get()) : -1; }
	/** dpumesh_node_check(): 0 while the node is there, -ENOTCONN once it has gone. */
	int node_check() noexcept { return dpumesh_node_check(_h.get()); }
	int progress() noexcept { return dpumesh_progress(_h.get()); }
	/** dpumesh_prepare_wait(): true when work is queued (do not block). */
	bool prepare_wait() noexcept { return dpumesh_prepare_wait(_h.get()) != 0; }

private:
	struct closer {
		void operator()(dpumesh_t *h) const noexcept { dpumesh_close(h); }
	};
	std::unique_ptr<dpumesh_t, closer> _h;
	int _rc = 0;
	std::string _error;
};

/** Owns a received message until destroyed (then dpumesh_msg_release). Move-only. */
class received_msg {
public:
	received_msg(dpumesh_t *h, dpumesh_msg *m) noexcept : _h(h), _m(m) {}
	received_msg(received_msg &&o) noexcept : _h(o._h), _m(std::exchange(o._m, nullptr)) {}
	received_msg &operator=(received_msg &&o) noexcept
	{
		if (this != &o) {
			reset();
			_h = o._h;
			_m = std::exchange(o._m, nullptr);
		}
		return *this;
	}
	received_msg(const received_msg &) = delete;
	received_msg &operator=(const received_msg &) = delete;
	~received_msg() { reset(); }
	const dpumesh_msg *operator->() const noexcept { return _m; }
	const dpumesh_msg *get() const noexcept { return _m; }
	void reset() noexcept
	{
		if (_m)
			dpumesh_msg_release(_h, std::exchange(_m, nullptr));
	}

private:
	dpumesh_t *_h;
	dpumesh_msg *_m;
};

} // namespace dpumesh
