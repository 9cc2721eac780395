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

/** The sum of " key=" over every line that starts with `prefix` (one per DPA thread, per
 *  worker...); -1 if no such line has the key. */
inline long long sum_of(const std::string &out, const std::string &prefix, const std::string &key)
{
	long long sum = -1;
	for (size_t line = 0; line < out.size();) {
		size_t end = out.find('\n', line);
		if (end == std::string::npos)
			end = out.size();
		const std::string l = out.substr(line, end - line);
		line = end + 1;
		if (l.compare(0, prefix.size(), prefix) != 0)
			continue;
		const long long v = value_of(l, prefix, key);
		if (v >= 0)
			sum = (sum < 0 ? 0 : sum) + v;
	}
	return sum;
}

} // namespace dpumesh::test
