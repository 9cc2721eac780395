// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the ingress gateway's scanner of a request's header block
// (gateway::head_scanner), fed the bytes a client sends.
//
// Input: the first byte, taken off, sets the piece size (1-32 bytes); the rest are the bytes
// read from the connection. Fed a piece at a time, the scanner must agree with itself fed
// the whole, and with a reference written another way (CRs taken out, leading LFs skipped,
// the first "\n\n" after them): where the block ends (the bytes taken), whether it ended,
// and the request line's first bytes; and it must never take more than it is given.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "dpumesh/gateway/gateway.h"

using dpumesh::gateway::head_scanner;

namespace {

struct outcome {
	size_t taken = 0;
	bool done = false;
	std::string method;
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
	return o;
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
	    pieces.method != whole.method)
		std::abort();
	if (whole.taken != ref.taken || whole.done != ref.done || whole.method != ref.method)
		std::abort();
	return 0;
}
