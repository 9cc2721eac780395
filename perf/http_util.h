// SPDX-License-Identifier: BSD-3-Clause
// HTTP/1.1 message heads for the baselines' load program and echo server (perf/ only).
//
// Just enough HTTP for keep-alive request/response with Content-Length bodies: the start
// line, Content-Length, and a refusal of what the benchmark never sends (chunked bodies,
// heads over 16 KiB). Not a general parser.
//
//   dpumesh::perf::http_head h;
//   if (parse_head(buf, true, &h) == parse_result::ok && buf.size() >= h.head_len + h.content_length)
//           ... a whole request is at the start of buf ...
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>
#include <strings.h>

namespace dpumesh::perf {

enum class parse_result { ok, incomplete, bad };

struct http_head {
	size_t head_len = 0;       /**< bytes up to and including the blank line */
	size_t content_length = 0; /**< body bytes that follow */
	int status = 0;            /**< responses: the status code */
};

inline constexpr size_t max_head = 16 * 1024;

/** Parses the head at the start of buf (a request when `request`, else a response). */
inline parse_result parse_head(std::string_view buf, bool request, http_head *out)
{
	size_t end = buf.find("\r\n\r\n");
	if (end == std::string_view::npos)
		return buf.size() > max_head ? parse_result::bad : parse_result::incomplete;
	std::string_view head = buf.substr(0, end + 2);
	size_t eol = head.find("\r\n");
	std::string_view start = head.substr(0, eol);
	if (request) {
		size_t sp1 = start.find(' '), sp2 = start.rfind(' ');
		if (sp1 == std::string_view::npos || sp2 == sp1 || start.substr(sp2 + 1) != "HTTP/1.1")
			return parse_result::bad;
	} else {
		if (start.size() < 12 || start.substr(0, 7) != "HTTP/1." || start[8] != ' ')
			return parse_result::bad;
		out->status = std::atoi(std::string(start.substr(9, 3)).c_str());
		if (out->status < 100 || out->status > 599)
			return parse_result::bad;
	}
	bool have_length = false;
	size_t pos = eol + 2;
	while (pos < head.size()) {
		size_t next = head.find("\r\n", pos);
		std::string_view line = head.substr(pos, next - pos);
		pos = next + 2;
		size_t colon = line.find(':');
		if (colon == std::string_view::npos)
			return parse_result::bad;
		std::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
		while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
			value.remove_prefix(1);
		if (name.size() == 14 && strncasecmp(name.data(), "content-length", 14) == 0) {
			char *e;
			std::string v(value);
			unsigned long long n = std::strtoull(v.c_str(), &e, 10);
			if (v.empty() || *e || n > (64ull << 20))
				return parse_result::bad;
			out->content_length = static_cast<size_t>(n);
			have_length = true;
		} else if (name.size() == 17 && strncasecmp(name.data(), "transfer-encoding", 17) == 0) {
			return parse_result::bad; /* never sent by the benchmark */
		}
	}
	if (!have_length)
		out->content_length = 0;
	out->head_len = end + 4;
	return parse_result::ok;
}

} // namespace dpumesh::perf
