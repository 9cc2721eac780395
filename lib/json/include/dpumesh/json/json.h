// SPDX-License-Identifier: BSD-3-Clause
// The tree's one strict JSON reader: jansson documents with source positions, and readers.
//
// Every error names the source, line, column and JSON pointer of the offending value:
//
//   auto doc = dpumesh::json::document::load_file("graph.json");
//   if (!doc) return doc.error();             // graph.json:3:7: '}' expected near ...
//   dpumesh::json::reader r(*doc);
//   dpumesh::json::object_reader o(r, doc->root(), "");
//   uint32_t n = 1;
//   o.uint("count", n, 1, 64);
//   o.done();                                 // unknown keys are errors
//   if (r.failed()) return *r.error();        // graph.json:2:12: /count: 99 is out of range [1, 64]
//
// The first error wins: once a reader has failed, every later check is a no-op, so a
// caller can read a whole object and look at the result once. Duplicate keys are refused.
#pragma once

#include <jansson.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpumesh/common/status.h"

namespace dpumesh::json {

/** 1-based line and column (in bytes) of a value in the source text. */
struct position {
	unsigned line = 0;
	unsigned column = 0;
};

/** Where each value and each object key starts, keyed by JSON pointer ("/ports/0/dev"). */
struct located {
	std::map<std::string, position> values;
	std::map<std::string, position> keys;
};

/**
 * Scans syntactically valid JSON (text jansson accepted) and records positions. Written by
 * hand because no Debian JSON library exposes per-value positions.
 */
located locate(std::string_view text);

/** Appends one reference token to a JSON pointer, escaping '~' and '/' (RFC 6901). */
std::string pointer_append(const std::string &base, std::string_view token);
/** pointer_append(base, std::to_string(index)). */
std::string pointer_append(const std::string &base, size_t index);
/**
 * The reference tokens of a JSON pointer, unescaped ("~1" is '/', "~0" is '~'; RFC 6901):
 * "/a~1b/0" is {"a/b", "0"}, "" is {}. A pointer that does not start with '/', or a '~' not
 * followed by '0' or '1', is an error naming the pointer.
 */
result<std::vector<std::string>> pointer_tokens(std::string_view pointer);
/**
 * A reference token as an index of an array of `size` elements: "0", or digits without a
 * leading zero (RFC 6901's array-index), below `size`. Anything else (including "-", "01",
 * "+1" and indices past the end) is nullopt.
 */
std::optional<size_t> pointer_index(std::string_view token, size_t size);

/** "an object", "a string", ...: for "expected X, got Y" messages. */
const char *type_name(const json_t *v);

struct json_deleter {
	void operator()(json_t *j) const noexcept { json_decref(j); }
};
/** An owned jansson value. */
using json_ptr = std::unique_ptr<json_t, json_deleter>;

/** A parsed JSON text: its root value, its source name and the position of every value. */
class document {
public:
	/** Parses `text` strictly (duplicate keys refused); `source` names it in errors. */
	static result<document> parse(std::string_view text, std::string source);
	/** Reads and parses a file of at most max_bytes. */
	static result<document> load_file(const std::string &path, size_t max_bytes = 16u << 20);

	const json_t *root() const { return _root.get(); }
	const std::string &source() const { return _source; }
	const std::string &text() const { return _text; }
	const located &positions() const { return _loc; }
	/** Hands the value positions over (the document keeps answering from the key table). */
	std::map<std::string, position> take_value_positions() { return std::move(_loc.values); }

	/**
	 * "source:line:col: /pointer: message". `at_key` places it at the key naming the value
	 * (for unknown keys); an unknown pointer places it at 0:0.
	 */
	status error_at(const std::string &pointer, const std::string &message,
			bool at_key = false) const;

private:
	document() = default;
	json_ptr _root;
	std::string _source;
	std::string _text;
	located _loc;
};

/** The state of one reading pass over a document: the first error, if any. */
class reader {
public:
	explicit reader(const document &doc) : _doc(doc) {}

	bool failed() const { return _err.has_value(); }
	const std::optional<status> &error() const { return _err; }
	/** ok, or the first error. */
	status result() const { return _err ? *_err : status::ok(); }
	const document &doc() const { return _doc; }

	/** Records an error at a pointer unless one is already recorded. */
	void fail(const std::string &pointer, const std::string &message, bool at_key = false);

private:
	const document &_doc;
	std::optional<status> _err;
};

/**
 * Reads the keys of one JSON object, remembering which were asked for, so that done() can
 * refuse the others (with a "did you mean" hint). `v` may be nullptr (a parent was invalid
 * or an optional key absent): the reader then reads nothing.
 */
class object_reader {
public:
	object_reader(reader &r, const json_t *v, std::string pointer);

	bool valid() const { return _v && !_r.failed(); }
	std::string child(std::string_view key) const { return pointer_append(_ptr, key); }
	const std::string &ptr() const { return _ptr; }
	reader &r() const { return _r; }
	/** Fails at this object's pointer. */
	void fail(const std::string &message) { _r.fail(_ptr, message); }
	/** Fails at a key's value. */
	void fail(std::string_view key, const std::string &message) { _r.fail(child(key), message); }

	/** The value at key (nullptr when absent, with an error when required). */
	const json_t *get(const char *key, bool required = false);

	/** A string of 1..max_len bytes without NUL. */
	bool str(const char *key, std::string &out, bool required = false, size_t max_len = 255);

	/** An integer in [lo, hi]. */
	template <typename T>
	bool uint(const char *key, T &out, uint64_t lo, uint64_t hi, bool required = false)
	{
		uint64_t x = 0;
		if (!uint_value(key, x, lo, hi, required))
			return false;
		out = static_cast<T>(x);
		return true;
	}

	bool boolean(const char *key, bool &out, bool required = false);

	/** A string that must be one of `choices`. */
	template <typename E>
	bool enumeration(const char *key, E &out,
			 std::initializer_list<std::pair<const char *, E>> choices,
			 bool required = false)
	{
		std::string s;
		if (!str(key, s, required))
			return false;
		std::string names;
		for (const auto &[name, value] : choices) {
			if (s == name) {
				out = value;
				return true;
			}
			names += names.empty() ? "" : ", ";
			names += name;
		}
		fail(key, "\"" + s + "\" is not one of: " + names);
		return false;
	}

	/** The array at key, of at most max_items (nullptr when absent or wrong, with an error). */
	const json_t *array(const char *key, bool required = false, size_t max_items = 4096);

	/** Reports the first key that no getter asked for. Call after all getters. */
	void done();

private:
	bool uint_value(const char *key, uint64_t &out, uint64_t lo, uint64_t hi, bool required);

	reader &_r;
	const json_t *_v;
	std::string _ptr;
	std::set<std::string, std::less<>> _known;
};

} // namespace dpumesh::json
