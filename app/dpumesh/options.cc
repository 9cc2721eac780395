// SPDX-License-Identifier: BSD-3-Clause
// Command-line options of the dpumesh application.
#include "dpumesh/app/options.h"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_version.h>

#include "dpumesh/abi/abi.h"
#include "dpumesh/common/log.h"
#include "dpumesh/common/numbers.h"

namespace dpumesh::app {

namespace {

enum opt_id {
	opt_config = 'c',
	opt_interactive = 'i',
	opt_help = 'h',
	opt_version = 'v',
	opt_stats_period = 256,
	opt_dpa_backend,
	opt_dpa_device,
	opt_dma,
	opt_cmdline_file,
	opt_wait_pods,
	opt_stats_format,
	opt_workers,
	opt_control_priority,
};

const option long_options[] = {
	{"config", required_argument, nullptr, opt_config},
	{"interactive", no_argument, nullptr, opt_interactive},
	{"cmdline-file", required_argument, nullptr, opt_cmdline_file},
	{"stats-period", required_argument, nullptr, opt_stats_period},
	{"stats-format", required_argument, nullptr, opt_stats_format},
	{"dpa-backend", required_argument, nullptr, opt_dpa_backend},
	{"dpa-device", required_argument, nullptr, opt_dpa_device},
	{"dma", required_argument, nullptr, opt_dma},
	{"wait-pods", required_argument, nullptr, opt_wait_pods},
	{"workers", required_argument, nullptr, opt_workers},
	{"control-priority", required_argument, nullptr, opt_control_priority},
	{"help", no_argument, nullptr, opt_help},
	{"version", no_argument, nullptr, opt_version},
	{nullptr, 0, nullptr, 0},
};

result<unsigned> parse_uint(const char *opt, const char *s, unsigned max)
{
	const auto v = parse_whole(s, 0, max);
	if (!v)
		return errorf("%s: \"%s\" is not a whole number in [0, %u]", opt, s, max);
	return static_cast<unsigned>(*v);
}

} // namespace

std::string usage(const char *prog)
{
	std::string p = prog ? prog : "dpumesh";
	return "Usage: " + p +
	       " [EAL options] -- [options]\n"
	       "\n"
	       "The data plane of a DPU-accelerated service mesh (see README.md).\n"
	       "\n"
	       "Options (after --):\n"
	       "  -c, --config FILE         node config (JSON); default: the embedded\n"
	       "                            conf/default.json\n"
	       "  -i, --interactive         run the interactive console (dpumesh> prompt)\n"
	       "      --cmdline-file FILE   run console commands from FILE at start\n"
	       "      --wait-pods N         keep the ports stopped until N pods have registered\n"
	       "                            (replays and benchmarks: no frame before the pods)\n"
	       "      --workers N           N run-to-completion worker lcores, each with its own\n"
	       "                            RX queues, sidecar shard and DPA threads (needs N\n"
	       "                            worker lcores, e.g. --lcores 0@0,1@1,2@1 for 2);\n"
	       "                            overrides /lcores/workers (and, N > 1, the\n"
	       "                            /lcores/stages placement)\n"
	       "      --control-priority N  run the control thread (pod registrations, console)\n"
	       "                            as SCHED_FIFO priority N (1-99; 0: time-sharing,\n"
	       "                            the default); needs CAP_SYS_NICE; overrides\n"
	       "                            /lcores/control_priority\n"
	       "      --stats-period SEC    print statistics every SEC seconds (0: only at\n"
	       "                            exit; default 1, or 0 with -i)\n"
	       "      --stats-format compact|full\n"
	       "                            compact: a few lines a person reads at a glance\n"
	       "                            (default); full: every counter, for scripts\n"
	       "      --dpa-backend emu|doca\n"
	       "                            DPA kernels on the emulator (lcores) or on a\n"
	       "                            BlueField-3's DPA via DOCA (a build with\n"
	       "                            -DDPUMESH_DOCA=ON); overrides /dpa/backend\n"
	       "      --dpa-device PCI      doca: the PCI function the DPA process runs on (the\n"
	       "                            PF, e.g. 0000:03:00.0); overrides /dpa/device\n"
	       "      --dma cpu|dmadev[:NAME]\n"
	       "                            DMA engine: CPU copy or a DPDK dmadev (e.g.\n"
	       "                            dmadev:dma_skeleton); overrides /dma\n"
	       "  -h, --help                this text\n"
	       "  -v, --version             version and ABI version\n"
	       "\n"
	       "EAL options are DPDK's: e.g. -l 0-1 --no-huge -m 512 --no-pci --no-shconf\n"
	       "--vdev net_pcap0,rx_pcap=FILE; see the DPDK EAL parameters guide.\n"
	       "Operating (docs/console.md): -i for the console; dpdk-telemetry.py -f PREFIX\n"
	       "reads /dpumesh/... (use a unique --file-prefix=PREFIX); dpdk-dumpcap needs\n"
	       "hugepages and no --no-shconf.\n"
	       "\n"
	       "Example:\n"
	       "  " +
	       p +
	       " -l 0-1 --no-huge -m 512 --no-pci --no-shconf \\\n"
	       "      --vdev net_pcap0,rx_pcap=sample.pcap,infinite_rx=1 -- \\\n"
	       "      --config conf/default.json --stats-period 1\n";
}

bool wants_help_or_version(int argc, char **argv, bool *version)
{
	int start = 1;
	for (int i = 1; i < argc; i++)
		if (std::strcmp(argv[i], "--") == 0) {
			start = i + 1;
			break;
		}
	for (int i = start; i < argc; i++) {
		if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h"))
			return true;
		if (!std::strcmp(argv[i], "--version") || !std::strcmp(argv[i], "-v")) {
			*version = true;
			return true;
		}
	}
	return false;
}

namespace {

unsigned free_hugepages()
{
	FILE *f = std::fopen("/proc/meminfo", "r");
	unsigned n = 0;
	char line[128];
	while (f && std::fgets(line, sizeof(line), f))
		if (std::sscanf(line, "HugePages_Free: %u", &n) == 1)
			break;
	if (f)
		std::fclose(f);
	return n;
}

} // namespace

result<std::vector<char *>> eal_init(int argc, char **argv)
{
	static std::string defaults[] = {"--no-huge", "-m", "512", "--no-pci"};
	std::vector<char *> args(argv, argv + argc);
	if ((argc == 1 || !std::strcmp(argv[1], "--")) && free_hugepages() == 0) {
		std::fprintf(stderr, "dpumesh: no EAL options and no free hugepage: running with "
				     "--no-huge -m 512 --no-pci\n");
		for (size_t i = 0; i < std::size(defaults); i++)
			args.insert(args.begin() + 1 + static_cast<long>(i), defaults[i].data());
	}
	int nb = rte_eal_init(static_cast<int>(args.size()), args.data());
	if (nb < 0)
		return errorf("EAL initialisation failed: %s", rte_strerror(rte_errno));
	args.erase(args.begin(), args.begin() + nb); /* EAL leaves the program name at [nb] */
	return args;
}

bool print_help_or_version(int argc, char **argv, const char *version)
{
	bool want_version = false;
	if (!wants_help_or_version(argc, argv, &want_version))
		return false;
	if (want_version)
		std::printf("dpumesh %s (descriptor ABI %u, DPDK %s)\n", version, DPUMESH_ABI_VERSION,
			    rte_version());
	else
		std::fputs(usage(argv[0]).c_str(), stdout);
	return true;
}

result<options> parse_options(int argc, char **argv)
{
	options o;
	std::vector<char *> args(argv, argv + argc);
	args.push_back(nullptr);
	optind = 0; /* 0: full re-initialisation of GNU getopt between calls */
	opterr = 0;
	int c;
	int idx = 0;
	while ((c = getopt_long(argc, args.data(), ":c:ihv", long_options, &idx)) != -1) {
		switch (c) {
		case opt_config: o.config_path = optarg; break;
		case opt_interactive: o.interactive = true; break;
		case opt_cmdline_file: o.cmdline_file = optarg; break;
		case opt_help: o.help = true; break;
		case opt_version: o.version = true; break;
		case opt_wait_pods: {
			DPUMESH_ASSIGN_OR_RETURN(o.wait_pods, parse_uint("--wait-pods", optarg, DPUMESH_MAX_PODS));
			break;
		}
		case opt_workers: {
			uint32_t w;
			DPUMESH_ASSIGN_OR_RETURN(w, parse_uint("--workers", optarg, 16));
			if (w == 0)
				return errorf("--workers: must be 1 to 16");
			o.workers = w;
			break;
		}
		case opt_control_priority: {
			uint32_t p;
			DPUMESH_ASSIGN_OR_RETURN(p, parse_uint("--control-priority", optarg, 99));
			o.control_priority = p;
			break;
		}
		case opt_stats_period: {
			DPUMESH_ASSIGN_OR_RETURN(o.stats_period,
						 parse_uint("--stats-period", optarg, 3600));
			o.stats_period_given = true;
			break;
		}
		case opt_stats_format:
			if (!std::strcmp(optarg, "compact") || !std::strcmp(optarg, "full"))
				o.stats_full = optarg[0] == 'f';
			else
				return errorf("--stats-format: \"%s\" is not one of: compact, full", optarg);
			break;
		case opt_dpa_backend:
			if (!std::strcmp(optarg, "emu"))
				o.dpa_backend = config::dpa_backend::emu;
			else if (!std::strcmp(optarg, "doca"))
				o.dpa_backend = config::dpa_backend::doca;
			else
				return errorf("--dpa-backend: \"%s\" is not one of: emu, doca", optarg);
			break;
		case opt_dpa_device:
			if (!config::valid_pci_address(optarg))
				return errorf("--dpa-device: \"%s\" is not a PCI address ([DDDD:]BB:DD.F, "
					      "e.g. 0000:03:00.0)", optarg);
			o.dpa_device = optarg;
			break;
		case opt_dma: {
			std::string v = optarg;
			if (v == "cpu") {
				o.dma_backend = config::dma_backend::cpu;
			} else if (v == "dmadev" || v.rfind("dmadev:", 0) == 0) {
				o.dma_backend = config::dma_backend::dmadev;
				o.dma_device = v.size() > 7 ? v.substr(7) : "";
			} else {
				return errorf("--dma: \"%s\" is not one of: cpu, dmadev[:NAME]", optarg);
			}
			break;
		}
		case ':': {
			const char *given = args[optind - 1];
			if (given && !std::strncmp(given, "--", 2))
				return errorf("%s needs an argument", given);
			return errorf("-%c needs an argument", optopt);
		}
		default: {
			const char *given = args[optind - 1];
			if (given && !std::strncmp(given, "--", 2))
				return errorf("unknown option %s", given);
			return errorf("unknown option -%c", optopt ? optopt : '?');
		}
		}
	}
	if (optind < argc)
		return errorf("unexpected argument \"%s\"", argv[optind]);
	return o;
}

void apply_overrides(const options &o, config::node_config &cfg)
{
	if (o.dpa_backend)
		cfg.dpa.backend = *o.dpa_backend;
	if (!o.dpa_device.empty())
		cfg.dpa.device = o.dpa_device;
	if (o.workers && config::set_workers(cfg, *o.workers))
		DPUMESH_LOG(NOTICE, config,
			    "--workers %u: the config's /lcores/stages placement is for one worker; "
			    "each worker runs every stage of its share",
			    *o.workers);
	if (o.control_priority)
		cfg.lcores.control_priority = *o.control_priority;
	if (o.dma_backend) {
		cfg.dma.backend = *o.dma_backend;
		if (!o.dma_device.empty())
			cfg.dma.device = o.dma_device;
	}
}

status check_dpa_backend(const config::node_config &cfg, bool doca_built)
{
	if (cfg.dpa.backend != config::dpa_backend::doca)
		return status::ok();
	if (!doca_built)
		return errorf("dpa backend \"doca\": this build has no DOCA SDK; build with "
			      "-DDPUMESH_DOCA=ON where DOCA and dpacc are installed (docs/doca.md), "
			      "or use --dpa-backend emu");
	if (cfg.dpa.device.empty())
		return errorf("dpa backend \"doca\" needs the PCI function the DPA process runs on: "
			      "--dpa-device PCI or /dpa/device (the PF, e.g. 0000:03:00.0)");
	if (cfg.dpa.host_device.empty())
		return errorf("dpa backend \"doca\" needs the host PF its pods register from: "
			      "/dpa/host_device (its representor's PCI address on the Arm, e.g. "
			      "0000:3b:00.0)");
	return status::ok();
}

} // namespace dpumesh::app
