// SPDX-License-Identifier: BSD-3-Clause
// dpumesh's own command line (everything after EAL's "--"), parsed with getopt_long.
#pragma once

#include <optional>
#include <string>

#include "dpumesh/config/config.h"
#include "dpumesh/common/status.h"

namespace dpumesh::app {

struct options {
	std::string config_path; /**< empty: the embedded conf/default.json */
	bool interactive = false;
	std::string cmdline_file;
	unsigned stats_period = 1; /**< seconds between stats prints; 0: only at exit */
	bool stats_period_given = false; /**< -i defaults the period to 0 unless given */
	bool stats_full = false; /**< --stats-format full: every counter in the periodic block */
	std::optional<config::dpa_backend> dpa_backend;
	std::string dpa_device; /**< --dpa-device: PCI address (doca backend) */
	std::optional<uint32_t> workers; /**< --workers N: overrides /lcores/workers */
	/** --control-priority N: overrides /lcores/control_priority */
	std::optional<uint32_t> control_priority;
	std::optional<config::dma_backend> dma_backend;
	std::string dma_device;
	unsigned wait_pods = 0; /**< keep port stages paused until this many pods registered */
	bool help = false;
	bool version = false;
};

/** Parses argv (argv[0] is the program name). Errors name the option. */
result<options> parse_options(int argc, char **argv);

/** True if argv asks for --help/-h or --version anywhere after "--" (or with no "--"). */
bool wants_help_or_version(int argc, char **argv, bool *version);

/**
 * rte_eal_init on the command line. When no EAL option was given (`dpumesh`, `dpumesh -- -i`)
 * and no hugepage is free, "--no-huge -m 512 --no-pci" is added (and said), so the
 * embedded default runs on any Linux box.
 * @return what follows EAL's arguments, program name first (for parse_options), or an error
 */
result<std::vector<char *>> eal_init(int argc, char **argv);

/** Prints the usage (-h, --help) or the version (-v, --version) when asked for, after any
 * "--"; returns whether it did. */
bool print_help_or_version(int argc, char **argv, const char *version);

/** The usage text listing every option. */
std::string usage(const char *prog);

/** Applies --dpa-backend/--dpa-device/--dma on top of the config. */
void apply_overrides(const options &o, config::node_config &cfg);

/**
 * Whether this build can run the configured DPA backend: the emulator always; doca only in
 * a build with -DDPUMESH_DOCA=ON (doca_built) and with a device (--dpa-device or
 * /dpa/device). An error says which option is missing.
 */
status check_dpa_backend(const config::node_config &cfg, bool doca_built);

} // namespace dpumesh::app
