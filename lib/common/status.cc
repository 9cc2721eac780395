// SPDX-License-Identifier: BSD-3-Clause
// printf-style construction of control-path errors.
#include "dpumesh/common/status.h"

#include <cstdarg>
#include <cstdio>

namespace dpumesh {

status errorf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	va_list ap2;
	va_copy(ap2, ap);
	int n = std::vsnprintf(nullptr, 0, fmt, ap);
	va_end(ap);
	std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
	std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
	va_end(ap2);
	return status::error(std::move(s));
}

} // namespace dpumesh
