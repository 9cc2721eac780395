// SPDX-License-Identifier: BSD-3-Clause
// Strict readers of JSON objects: types, ranges, required and unknown keys.
#include "dpumesh/json/json.h"

#include "dpumesh/common/text.h"

namespace dpumesh::json {

void reader::fail(const std::string &pointer, const std::string &message, bool at_key)
{
	if (!_err)
		_err = _doc.error_at(pointer, message, at_key);
}

object_reader::object_reader(reader &r, const json_t *v, std::string pointer)
	: _r(r), _v(v), _ptr(std::move(pointer))
{
	if (v && !json_is_object(v)) {
		_r.fail(_ptr, std::string("expected an object, got ") + type_name(v));
		_v = nullptr;
	}
}

const json_t *object_reader::get(const char *key, bool required)
{
	_known.insert(key);
	if (!valid())
		return nullptr;
	const json_t *v = json_object_get(_v, key);
	if (!v && required)
		fail(std::string("missing required key \"") + key + "\"");
	return v;
}

bool object_reader::str(const char *key, std::string &out, bool required, size_t max_len)
{
	const json_t *v = get(key, required);
	if (!v)
		return false;
	if (!json_is_string(v)) {
		fail(key, std::string("expected a string, got ") + type_name(v));
		return false;
	}
	size_t n = json_string_length(v);
	if (n == 0 || n > max_len) {
		fail(key, "length " + std::to_string(n) + " is out of range [1, " +
				  std::to_string(max_len) + "]");
		return false;
	}
	std::string s(json_string_value(v), n);
	if (s.find('\0') != std::string::npos) {
		fail(key, "contains a NUL character");
		return false;
	}
	out = std::move(s);
	return true;
}

bool object_reader::uint_value(const char *key, uint64_t &out, uint64_t lo, uint64_t hi,
			       bool required)
{
	const json_t *v = get(key, required);
	if (!v)
		return false;
	if (!json_is_integer(v)) {
		fail(key, std::string("expected an integer, got ") + type_name(v));
		return false;
	}
	json_int_t x = json_integer_value(v);
	if (x < 0 || static_cast<uint64_t>(x) < lo || static_cast<uint64_t>(x) > hi) {
		fail(key, std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
				  std::to_string(hi) + "]");
		return false;
	}
	out = static_cast<uint64_t>(x);
	return true;
}

bool object_reader::boolean(const char *key, bool &out, bool required)
{
	const json_t *v = get(key, required);
	if (!v)
		return false;
	if (!json_is_boolean(v)) {
		fail(key, std::string("expected a boolean, got ") + type_name(v));
		return false;
	}
	out = json_is_true(v);
	return true;
}

const json_t *object_reader::array(const char *key, bool required, size_t max_items)
{
	const json_t *v = get(key, required);
	if (!v)
		return nullptr;
	if (!json_is_array(v)) {
		fail(key, std::string("expected an array, got ") + type_name(v));
		return nullptr;
	}
	if (json_array_size(v) > max_items) {
		fail(key, "too many items (" + std::to_string(json_array_size(v)) + ", at most " +
				  std::to_string(max_items) + ")");
		return nullptr;
	}
	return v;
}

void object_reader::done()
{
	if (!valid())
		return;
	const char *key;
	json_t *value;
	json_object_foreach(const_cast<json_t *>(_v), key, value)
	{
		(void)value;
		if (_known.count(key))
			continue;
		std::string msg = std::string("unknown key \"") + key + "\"";
		std::string best;
		size_t best_d = 3;
		for (const auto &k : _known) {
			size_t d = edit_distance(key, k);
			if (d < best_d) {
				best_d = d;
				best = k;
			}
		}
		if (!best.empty())
			msg += " (did you mean \"" + best + "\"?)";
		_r.fail(child(key), msg, true);
		return;
	}
}

} // namespace dpumesh::json
