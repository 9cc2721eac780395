// SPDX-License-Identifier: BSD-3-Clause
// A client of DPDK's telemetry v2 socket, as dpdk-telemetry.py talks to it, for tests.
#pragma once

#include <jansson.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace dpumesh::test {

/** EAL's runtime directory for a file prefix (eal_get_runtime_dir in DPDK 22.11). */
inline std::string runtime_dir(const std::string &pfx)
{
	if (getuid() == 0)
		return "/var/run/dpdk/" + pfx;
	const char *x = std::getenv("XDG_RUNTIME_DIR");
	return std::string(x ? x : "/tmp") + "/dpdk/" + pfx;
}

using json_ptr = std::unique_ptr<json_t, decltype(&json_decref)>;

/** A client of the telemetry v2 socket, as dpdk-telemetry.py: SOCK_SEQPACKET, JSON. */
class telemetry_client {
public:
	bool connect(const std::string &path, std::string *hello)
	{
		_fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		sockaddr_un a{};
		a.sun_family = AF_UNIX;
		std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
		if (::connect(_fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0)
			return false;
		*hello = recv_text();
		return !hello->empty();
	}
	~telemetry_client()
	{
		if (_fd >= 0)
			close(_fd);
	}
	/** Sends a command; returns the reply's text as it came. */
	std::string raw(const std::string &cmd)
	{
		if (send(_fd, cmd.data(), cmd.size(), 0) < 0)
			return "";
		return recv_text();
	}
	/** Sends a command; returns the value under the command's key (nullptr on error). */
	json_ptr query(const std::string &cmd)
	{
		if (send(_fd, cmd.data(), cmd.size(), 0) < 0)
			return {nullptr, &json_decref};
		std::string text = recv_text();
		json_error_t err;
		json_ptr root(json_loads(text.c_str(), 0, &err), &json_decref);
		if (!root)
			return root;
		json_t *v = json_object_get(root.get(), cmd.substr(0, cmd.find(',')).c_str());
		return {v ? json_incref(v) : nullptr, &json_decref};
	}

private:
	std::string recv_text()
	{
		std::string buf(65536, '\0');
		ssize_t n = recv(_fd, buf.data(), buf.size(), 0);
		return n > 0 ? buf.substr(0, static_cast<size_t>(n)) : "";
	}
	int _fd = -1;
};

inline uint64_t u64_at(json_t *obj, const char *key, size_t idx)
{
	json_t *arr = json_object_get(obj, key);
	json_t *v = json_is_array(arr) ? json_array_get(arr, idx) : json_object_get(obj, key);
	return json_is_integer(v) ? static_cast<uint64_t>(json_integer_value(v)) : UINT64_MAX;
}

/** The sum of an array-valued key over its elements (one per DPA thread, engine...). */
inline uint64_t u64_sum(json_t *obj, const char *key)
{
	json_t *arr = json_object_get(obj, key);
	if (!json_is_array(arr))
		return u64_at(obj, key, 0);
	uint64_t sum = 0;
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *v = json_array_get(arr, i);
		if (!json_is_integer(v))
			return UINT64_MAX;
		sum += static_cast<uint64_t>(json_integer_value(v));
	}
	return sum;
}

inline std::string str_at(json_t *obj, const char *key, size_t idx)
{
	json_t *arr = json_object_get(obj, key);
	json_t *v = json_is_array(arr) ? json_array_get(arr, idx) : json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : "";
}


} // namespace dpumesh::test
