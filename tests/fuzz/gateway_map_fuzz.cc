// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the ingress gateway's mapping of untrusted input (lib/gateway).
//
// Input: parts separated by 0x00 (no part holds a NUL, as neither evhttp's header lines nor a
// mesh value can): the path, the request id, then header name and value pairs. The first
// byte, taken off, sets the output's room (so a header that does not fit comes up).
//  - build_request_l7: 0, and then the header decodes as a request with the same service,
//    method and path and exactly the fields expected (lowercased names, hop-by-hop ones
//    left out, x-request-id added when missing), never written past its room; or 400/431.
//  - error_body (the path and the request id as a mesh answer's :reason and :hop, which a
//    pod can make): jansson parses it (RFC 8259: valid UTF-8), its strings hold no control
//    byte, and are the inputs themselves when those are UTF-8 without control bytes.
//  - mesh_reason_label: the reason itself, a [a-z0-9_] token of 1-64 bytes, or "invalid".
//  - http_status_for_mesh: a 4xx or 5xx status whatever the mesh status and reason.
#include <jansson.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpumesh/gateway/gateway.h"
#include "dpumesh/wire/l7.h"

using namespace dpumesh;

namespace {

bool plain_utf8(std::string_view s)
{
	/* jansson's own check, on a JSON string of s (escaped for '"' and '\\') */
	std::string doc = "\"";
	for (char c : s) {
		if (static_cast<unsigned char>(c) < 0x20)
			return false;
		if (c == '"' || c == '\\')
			doc += '\\';
		doc += c;
	}
	doc += '"';
	json_error_t err;
	json_t *j = json_loadb(doc.data(), doc.size(), JSON_DECODE_ANY, &err);
	const bool ok = j != nullptr;
	json_decref(j);
	return ok;
}

void check_error_body(std::string_view reason, std::string_view hop, int status)
{
	const std::string body = gateway::error_body(reason, hop, status);
	json_error_t err;
	json_t *j = json_loadb(body.data(), body.size(), 0, &err);
	if (!j || !json_is_object(j))
		std::abort();
	const char *e = json_string_value(json_object_get(j, "error"));
	const char *h = json_string_value(json_object_get(j, "hop"));
	if (!e || !h || json_integer_value(json_object_get(j, "status")) != status)
		std::abort();
	const std::string_view ev(e, json_string_length(json_object_get(j, "error")));
	const std::string_view hv(h, json_string_length(json_object_get(j, "hop")));
	for (std::string_view v : {ev, hv})
		for (char c : v)
			if (static_cast<unsigned char>(c) < 0x20)
				std::abort();
	if (plain_utf8(reason) && ev != reason)
		std::abort();
	if (plain_utf8(hop) && hv != hop)
		std::abort();
	json_decref(j);
}

void check_label(std::string_view reason)
{
	const std::string_view l = gateway::mesh_reason_label(reason);
	if (l == "invalid")
		return;
	if (l != reason || l.empty() || l.size() > 64)
		std::abort();
	for (unsigned char c : l)
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const size_t room = 64 + (size_t(data[0]) * 193) % wire::l7_max_size;
	std::vector<std::string> parts(1);
	for (size_t i = 1; i < size; i++) {
		if (data[i] == 0)
			parts.emplace_back();
		else
			parts.back() += static_cast<char>(data[i]);
	}
	if (parts.size() < 2)
		parts.emplace_back();
	const std::string &path = parts[0], &request_id = parts[1];
	std::vector<std::pair<std::string, std::string>> headers;
	for (size_t i = 2; i + 1 < parts.size(); i += 2)
		headers.emplace_back(parts[i], parts[i + 1]);

	/* exactly `room` bytes, so ASan sees a write past them */
	std::vector<uint8_t> buf(room);
	size_t len = 0;
	const int rc = gateway::build_request_l7("svc", "GET", path, 1500, headers, request_id,
						 buf.data(), buf.size(), &len);
	if (rc == 0) {
		wire::l7_view v;
		if (len == 0 || len > room || wire::l7_decode(buf.data(), len, &v) != wire::l7_error::ok)
			std::abort();
		if (v.kind != wire::l7_kind::request || v.service != "svc" || v.method != "GET" ||
		    v.path != path || v.deadline_ms != 1500)
			std::abort();
		std::vector<std::pair<std::string, std::string>> want;
		bool has_id = false;
		for (const auto &[n, x] : headers) {
			std::string low = n;
			for (char &c : low)
				c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
			if (gateway::is_hop_by_hop(low))
				continue;
			has_id = has_id || low == "x-request-id";
			want.emplace_back(low, x);
		}
		if (!has_id && !request_id.empty())
			want.emplace_back("x-request-id", request_id);
		size_t k = 0;
		v.for_each([&](std::string_view n, std::string_view x) {
			if (k >= want.size() || want[k].first != n || want[k].second != x)
				std::abort();
			k++;
		});
		if (k != want.size())
			std::abort();
	} else if (rc != 400 && rc != 431) {
		std::abort();
	}

	check_error_body(path, request_id, 502);
	check_label(path);
	const uint16_t mesh_status = static_cast<uint16_t>(size * 37 % 1000);
	const int st = gateway::http_status_for_mesh(mesh_status, path);
	if (st < 400 || st > 599)
		std::abort();
	return 0;
}
