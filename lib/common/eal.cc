// SPDX-License-Identifier: BSD-3-Clause
// EAL entered from a made argument list, and its runtime directory removed at exit (eal.h).
#include "dpumesh/common/eal.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <rte_eal.h>

#include "dpumesh/common/log.h"
#include "dpumesh/common/tsan.h"

namespace dpumesh {

int eal_init(std::vector<std::string> &args)
{
	std::vector<char *> argv;
	argv.reserve(args.size());
	for (std::string &a : args)
		argv.push_back(a.data());
	log_register_types();
	const int rc = rte_eal_init(static_cast<int>(argv.size()), argv.data());
	if (rc >= 0)
		tsan::annotate_mempools();
	return rc;
}

namespace {

/* The primary's hugepage files, "<prefix>map_<n>" in each hugetlbfs mount (eal.h): EAL keeps
 * them after exit for a restart with the same prefix, and they hold their pages until
 * removed. Only names that are exactly the prefix, "map_" and digits ("node1" does not take
 * "node10map_3"). */
void remove_hugepage_files(const std::string &prefix) noexcept
{
	FILE *mounts = std::fopen("/proc/mounts", "re");
	if (mounts == nullptr)
		return;
	char line[4096];
	const std::string head = prefix + "map_";
	while (std::fgets(line, sizeof(line), mounts) != nullptr) {
		char dev[256], dir[2048], type[64];
		if (std::sscanf(line, "%255s %2047s %63s", dev, dir, type) != 3 ||
		    std::strcmp(type, "hugetlbfs") != 0)
			continue;
		const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		DIR *d = fdopendir(fd);
		if (d == nullptr) {
			close(fd);
			continue;
		}
		while (const dirent *e = readdir(d)) {
			const char *n = e->d_name;
			if (std::strncmp(n, head.c_str(), head.size()) != 0 || n[head.size()] == '\0')
				continue;
			const char *q = n + head.size();
			while (*q >= '0' && *q <= '9')
				q++;
			if (*q == '\0')
				(void)unlinkat(fd, n, 0);
		}
		closedir(d); /* closes fd */
	}
	std::fclose(mounts);
}

} // namespace

int eal_cleanup() noexcept
{
	const bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
	const char *dir = rte_eal_get_runtime_dir();
	std::string path = primary && dir != nullptr ? dir : "";
	const int rc = rte_eal_cleanup();
	if (path.empty())
		return rc;
	/* the runtime directory is <runtime base>/<file-prefix> */
	if (const size_t slash = path.rfind('/'); slash != std::string::npos && slash + 1 < path.size())
		remove_hugepage_files(path.substr(slash + 1));
	const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rc;
	if (DIR *d = fdopendir(fd)) {
		while (const dirent *e = readdir(d))
			if (std::strcmp(e->d_name, "config") == 0 ||
			    std::strncmp(e->d_name, "fbarray_", 8) == 0 ||
			    std::strcmp(e->d_name, "dpdk_telemetry.v2") == 0 ||
			    std::strcmp(e->d_name, "telemetry") == 0)
				(void)unlinkat(fd, e->d_name, 0);
		closedir(d); /* closes fd */
	} else {
		close(fd);
	}
	(void)rmdir(path.c_str()); /* fails, and keeps it, while anything else is in it */
	return rc;
}

} // namespace dpumesh
