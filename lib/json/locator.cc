// SPDX-License-Identifier: BSD-3-Clause
// Records where each JSON value starts, for errors with line and column.
#include "dpumesh/json/json.h"

#include <cstdint>

namespace dpumesh::json {

std::string pointer_append(const std::string &base, std::string_view token)
{
	std::string out = base;
	out.push_back('/');
	for (char c : token) {
		if (c == '~')
			out += "~0";
		else if (c == '/')
			out += "~1";
		else
			out.push_back(c);
	}
	return out;
}

std::string pointer_append(const std::string &base, size_t index)
{
	return base + "/" + std::to_string(index);
}

result<std::vector<std::string>> pointer_tokens(std::string_view pointer)
{
	std::vector<std::string> tokens;
	if (pointer.empty())
		return tokens;
	if (pointer[0] != '/')
		return errorf("JSON pointer \"%.*s\" does not start with '/'",
			      static_cast<int>(pointer.size()), pointer.data());
	for (size_t i = 1;; i++) {
		std::string t;
		for (; i < pointer.size() && pointer[i] != '/'; i++) {
			if (pointer[i] != '~') {
				t.push_back(pointer[i]);
				continue;
			}
			const char e = i + 1 < pointer.size() ? pointer[i + 1] : '\0';
			if (e != '0' && e != '1')
				return errorf("JSON pointer \"%.*s\": '~' at offset %zu is not "
					      "followed by 0 or 1 (\"~0\" is '~', \"~1\" is '/')",
					      static_cast<int>(pointer.size()), pointer.data(), i);
			t.push_back(e == '0' ? '~' : '/');
			i++;
		}
		tokens.push_back(std::move(t));
		if (i >= pointer.size())
			return tokens;
	}
}

std::optional<size_t> pointer_index(std::string_view token, size_t size)
{
	if (token.empty() || (token.size() > 1 && token[0] == '0'))
		return std::nullopt;
	size_t v = 0;
	for (char c : token) {
		if (c < '0' || c > '9')
			return std::nullopt;
		const size_t d = static_cast<size_t>(c - '0');
		if (v > (SIZE_MAX - d) / 10)
			return std::nullopt; /* past size_t, so past any array */
		v = v * 10 + d;
	}
	if (v >= size)
		return std::nullopt;
	return v;
}

namespace {

class scanner {
public:
	scanner(std::string_view text, located &out) : _t(text), _out(out) {}

	void value(const std::string &ptr)
	{
		skip_ws();
		if (_i >= _t.size())
			return;
		_out.values.emplace(ptr, here());
		char c = _t[_i];
		if (c == '{')
			object(ptr);
		else if (c == '[')
			array(ptr);
		else if (c == '"')
			string(nullptr);
		else
			scalar();
	}

private:
	position here() const { return {_line, static_cast<unsigned>(_i - _line_start) + 1}; }

	void advance()
	{
		if (_t[_i] == '\n') {
			_line++;
			_line_start = _i + 1;
		}
		_i++;
	}

	void skip_ws()
	{
		while (_i < _t.size() &&
		       (_t[_i] == ' ' || _t[_i] == '\t' || _t[_i] == '\n' || _t[_i] == '\r'))
			advance();
	}

	/* Reads a string token; decodes simple escapes into *out when given. Keys in
	 * dpumesh configs are ASCII, so \uXXXX is kept verbatim (no pointer will match it,
	 * which only costs a position, never correctness). */
	void string(std::string *out)
	{
		advance(); /* opening quote */
		while (_i < _t.size() && _t[_i] != '"') {
			if (_t[_i] == '\\' && _i + 1 < _t.size()) {
				advance();
				char e = _t[_i];
				if (out) {
					switch (e) {
					case 'n': out->push_back('\n'); break;
					case 't': out->push_back('\t'); break;
					case 'r': out->push_back('\r'); break;
					case 'b': out->push_back('\b'); break;
					case 'f': out->push_back('\f'); break;
					case 'u': out->append("\\u"); break;
					default: out->push_back(e); break;
					}
				}
				advance();
				continue;
			}
			if (out)
				out->push_back(_t[_i]);
			advance();
		}
		if (_i < _t.size())
			advance(); /* closing quote */
	}

	void scalar()
	{
		while (_i < _t.size()) {
			char c = _t[_i];
			if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' ||
			    c == '\r')
				break;
			advance();
		}
	}

	void object(const std::string &ptr)
	{
		advance(); /* { */
		for (;;) {
			skip_ws();
			if (_i >= _t.size())
				return;
			if (_t[_i] == '}') {
				advance();
				return;
			}
			if (_t[_i] == ',') {
				advance();
				continue;
			}
			position key_pos = here();
			std::string key;
			string(&key);
			std::string child = pointer_append(ptr, key);
			_out.keys.emplace(child, key_pos);
			skip_ws();
			if (_i < _t.size() && _t[_i] == ':')
				advance();
			value(child);
		}
	}

	void array(const std::string &ptr)
	{
		advance(); /* [ */
		size_t index = 0;
		for (;;) {
			skip_ws();
			if (_i >= _t.size())
				return;
			if (_t[_i] == ']') {
				advance();
				return;
			}
			if (_t[_i] == ',') {
				advance();
				continue;
			}
			value(pointer_append(ptr, std::to_string(index++)));
		}
	}

	std::string_view _t;
	located &_out;
	size_t _i = 0;
	size_t _line_start = 0;
	unsigned _line = 1;
};

} // namespace

located locate(std::string_view text)
{
	located out;
	scanner s(text, out);
	s.value("");
	return out;
}

} // namespace dpumesh::json
