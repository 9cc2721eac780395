// SPDX-License-Identifier: BSD-3-Clause
// EAL entered from a made argument list, and its runtime directory removed at exit (eal.h).
#include "dpumesh/common/eal.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <rte_eal.h>

#include "dpumesh/common/log.h"

namespace dpumesh {

int eal_init(std::vector<std::string> &args)
{
	std::vector<char *> argv;
	argv.reserve(args.size());
	for (std::string &a : args)
		argv.push_back(a.data());
	log_register_types();
	return rte_eal_init(static_cast<int>(argv.size()), argv.data());
}

int eal_cleanup() noexcept
{
	const bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
	const char *dir = rte_eal_get_runtime_dir();
	std::string path = primary && dir != nullptr ? dir : "";
	const int rc = rte_eal_cleanup();
	if (path.empty())
		return rc;
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
