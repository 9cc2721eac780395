// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the ingress gateway's scanner of a request's header block
// (gateway::head_scanner), fed the bytes a client sends.
//
// Input: the first byte, taken off, sets the piece size (1-32 bytes); the rest are the bytes
// read from the connection. Fed a piece at a time, the scanner must agree with itself fed
// the whole, and with a reference written another way (CRs taken out, leading LFs skipped,
// the first "\n\n" after them; the block's lines split whole): where the block ends (the
// bytes taken), whether it ended, the request line's first bytes, and the body length it
// announces (head_scanner::body_bytes); and it must never take more than it is given.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "dpumesh/gateway/gateway.h"

using dpumesh::gateway::head_scanner;

namespace {

constexpr uint64_t most = 1000;

struct outcome {
	size_t taken = 0;
	bool done = false;
	std::string method;
	uint64_t body = 0; /* body_bytes(most), once done */
};

outcome feed_in_pieces(const uint8_t *p, size_t n, size_t piece)
{
	head_scanner h;
	outcome o;
	for (size_t at = 0; at < n; at += piece) {
		const size_t len = std::min(piece, n - at);
		const size_t k = h.feed(p + at, len);
		if (k > len || (k < len && !h.done))
			std::abort();
		o.taken += k;
		if (h.done)
			break;
	}
	o.done = h.done;
	o.method.assign(h.method, h.method_len);
	o.body = h.done ? h.body_bytes(most) : 0;
	return o;
}

std::string lower(std::string s)
{
	for (char &c : s)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return s;
}

/* The body a block announces, from its raw lines (the request line first, the empty line
 * left out): a line's CR before its LF is its end, any other CR makes a length unclear. */
uint64_t reference_body(const std::string &method, const std::vector<std::string> &raw)
{
	bool body = false;
	/* evhttp 2.1.12's evhttp_method_may_have_body_(): CONNECT too, TRACE and HEAD not */
	for (const char *m : {"POST ", "PUT ", "PATCH ", "GET ", "DELETE ", "OPTIONS ", "CONNECT "})
		body = body || method.rfind(m, 0) == 0;
	if (!body)
		return 0;
	bool unknown = false, last_cl = false;
	int lengths = 0;
	uint64_t length = 0;
	for (size_t i = 1; i < raw.size(); i++) {
		std::string line = raw[i];
		if (!line.empty() && line.back() == '\r')
			line.pop_back();
		const bool stray_cr = line.find('\r') != std::string::npos;
		line.erase(std::remove(line.begin(), line.end(), '\r'), line.end());
		if (line[0] == ' ' || line[0] == '\t') {
			unknown = unknown || last_cl;
			continue;
		}
		last_cl = false;
		const size_t colon = line.find(':');
		if (colon == std::string::npos || colon >= 64)
			continue;
		const std::string name = lower(line.substr(0, colon));
		if (name == "transfer-encoding")
			unknown = true;
		if (name != "content-length")
			continue;
		last_cl = true;
		lengths++;
		std::string v = line.substr(colon + 1);
		while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
			v.erase(0, 1);
		while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
			v.pop_back();
		if (lengths > 1 || line.size() > 64 || stray_cr || v.empty() || v.size() > 19 ||
		    v.find_first_not_of("0123456789") != std::string::npos) {
			unknown = true;
			continue;
		}
		length = std::stoull(v);
	}
	if (unknown)
		return most;
	return lengths == 0 ? 0 : std::min(length, most);
}

outcome reference(const uint8_t *p, size_t n)
{
	std::string clean;
	std::vector<size_t> pos;
	for (size_t i = 0; i < n; i++)
		if (p[i] != '\r') {
			clean.push_back(static_cast<char>(p[i]));
			pos.push_back(i);
		}
	outcome o;
	o.taken = n;
	const size_t start = clean.find_first_not_of('\n');
	if (start == std::string::npos)
		return o;
	const size_t eol = clean.find('\n', start);
	o.method = clean.substr(start, std::min<size_t>(8, (eol == std::string::npos ? clean.size() : eol) - start));
	const size_t end = clean.find("\n\n", start);
	if (end != std::string::npos) {
		o.done = true;
		o.taken = pos[end + 1] + 1;
		/* the block's raw lines, from the request line's first byte to the LF before
		 * the empty line */
		std::vector<std::string> raw;
		std::string line;
		for (size_t i = pos[start]; i <= pos[end]; i++) {
			if (p[i] == '\n') {
				raw.push_back(line);
				line.clear();
			} else {
				line.push_back(static_cast<char>(p[i]));
			}
		}
		o.body = reference_body(o.method, raw);
	}
	return o;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const size_t piece = data[0] % 32 + 1;
	const uint8_t *p = data + 1;
	const size_t n = size - 1;
	const outcome whole = feed_in_pieces(p, n, n ? n : 1);
	const outcome pieces = feed_in_pieces(p, n, piece);
	const outcome ref = reference(p, n);
	if (pieces.taken != whole.taken || pieces.done != whole.done ||
	    pieces.method != whole.method || pieces.body != whole.body)
		std::abort();
	if (whole.taken != ref.taken || whole.done != ref.done || whole.method != ref.method ||
	    whole.body != ref.body)
		std::abort();
	return 0;
}
