// SPDX-License-Identifier: BSD-3-Clause
// Open file descriptors of this process, for tests that check nothing leaks.
#pragma once

#include <dirent.h>

namespace dpumesh::test {

/** Entries in /proc/self/fd (the directory's own fd included, as in every count). */
inline int count_fds()
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (dirent *e = readdir(d))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

} // namespace dpumesh::test
