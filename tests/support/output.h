// SPDX-License-Identifier: BSD-3-Clause
// Reading "key=value" lines that dpumesh and dpumesh-pod print (stats, DONE lines).
#pragma once

#include <cstdlib>
#include <string>

namespace dpumesh::test {

/** The value of " key=" on the last line containing `prefix` ("" if absent). */
inline std::string text_of(const std::string &out, const std::string &prefix,
			   const std::string &key)
{
	size_t line = out.rfind(prefix);
	if (line == std::string::npos)
		return "";
	size_t end = out.find('\n', line);
	std::string l = out.substr(line, end == std::string::npos ? std::string::npos : end - line);
	size_t at = l.find(" " + key + "=");
	if (at == std::string::npos)
		return "";
	size_t v = at + key.size() + 2;
	return l.substr(v, l.find(' ', v) - v);
}

/** The same as a number; -1 if absent. */
inline long long value_of(const std::string &out, const std::string &prefix,
			  const std::string &key)
{
	std::string v = text_of(out, prefix, key);
	return v.empty() ? -1 : std::strtoll(v.c_str(), nullptr, 10);
}

} // namespace dpumesh::test
