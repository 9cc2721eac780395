// SPDX-License-Identifier: BSD-3-Clause
// Parsing a JSON text or file into a document (jansson root + value positions).
#include "dpumesh/json/json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dpumesh/common/unique_fd.h"

namespace dpumesh::json {

const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "an unknown type";
}

result<document> document::parse(std::string_view text, std::string source)
{
	json_error_t jerr;
	json_t *root = json_loadb(text.data(), text.size(), JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return errorf("%s:%d:%d: %s", source.c_str(), jerr.line, jerr.column, jerr.text);
	document d;
	d._root.reset(root);
	d._source = std::move(source);
	d._text = std::string(text);
	d._loc = locate(text);
	return d;
}

result<document> document::load_file(const std::string &path, size_t max_bytes)
{
	/* read in steps and refused as soon as it passes max_bytes: a device or a pipe without
	 * an end (--config /dev/zero) is an error after max_bytes, not a read without end */
	unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		return errorf("%s: cannot open: %s", path.c_str(), std::strerror(errno));
	std::string text;
	char buf[64 * 1024];
	for (;;) {
		const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errorf("%s: cannot read: %s", path.c_str(), std::strerror(errno));
		}
		if (static_cast<size_t>(n) > max_bytes - text.size())
			return errorf("%s: file is larger than %zu bytes", path.c_str(), max_bytes);
		text.append(buf, static_cast<size_t>(n));
	}
	return parse(text, path);
}

status document::error_at(const std::string &pointer, const std::string &message,
			  bool at_key) const
{
	position p{};
	const auto &m = at_key ? _loc.keys : _loc.values;
	if (auto it = m.find(pointer); it != m.end())
		p = it->second;
	else if (auto it2 = _loc.values.find(pointer); it2 != _loc.values.end())
		p = it2->second;
	return errorf("%s:%u:%u: %s: %s", _source.c_str(), p.line, p.column,
		      pointer.empty() ? "/" : pointer.c_str(), message.c_str());
}

} // namespace dpumesh::json
