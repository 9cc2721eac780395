// SPDX-License-Identifier: BSD-3-Clause
// dpumesh: EAL, options and config, a node (lib/node), and the main lcore's control loop
// (pod registrations, console, periodic statistics) until Ctrl-C or `quit`.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "dpumesh/common/eal.h"
#include "dpumesh/app/options.h"
#include "dpumesh/common/log.h"
#include "dpumesh/config/config.h"
#include "dpumesh/console/console.h"
#include "dpumesh/control/control.h"
#include "dpumesh/node/node.h"
#include "dpumesh/policy/cli.h"
#include "stats.h"

#if DPUMESH_DOCA_BUILT
/* A -DDPUMESH_DOCA=ON build (never compiled on the machines this project is built on:
 * docs/doca.md): the DPA program dpacc built and its kernels' entry points. */
#include "dpumesh/doca/dpa_runtime.h"
extern "C" {
extern struct doca_dpa_app *dpumesh_dpa;
extern doca_dpa_func_t dpumesh_dpa_tx_entry;
extern doca_dpa_func_t dpumesh_dpa_rx_entry;
extern doca_dpa_func_t dpumesh_dpa_notify_rpc;
}
#endif

#ifndef DPUMESH_VERSION
#define DPUMESH_VERSION "0.0.0"
#endif
namespace dpumesh {
extern const std::string_view embedded_default_config;
}

namespace {

using namespace dpumesh;

volatile sig_atomic_t g_quit = 0;

void on_signal(int) { g_quit = 1; }

/** The console and the statistics until Ctrl-C or `quit`; returns the exit code. */
int control_loop(node::instance &n, control::node &ctl, const app::options &opts,
		 app::stats_printer &printer)
{
	int rc = 0;
	console::console con(ctl);
	status st = status::ok();
	if (!opts.cmdline_file.empty()) {
		auto r = con.run_file(opts.cmdline_file);
		st = r ? status::ok() : r.error();
	}
	if (st.is_ok() && opts.interactive && !ctl.quit.load())
		st = con.open_interactive();
	if (!st.is_ok()) {
		std::fprintf(stderr, "dpumesh: %s\n", st.message().c_str());
		rc = 1;
		ctl.quit.store(true);
	}
	while (!g_quit && !ctl.quit.load()) {
		if (opts.interactive) {
			if (!con.poll(5))
				break;
		} else {
			usleep(5 * 1000);
		}
		n.poll_control(); /* pod registrations, unregistrations, crashes */
		ctl.tick();
		if (printer.due(ctl.stats_period.load()))
			con.print_async(printer.periodic());
	}
	con.close_interactive();
	return rc;
}

int run(int argc, char **argv)
{
	if (app::print_help_or_version(argc, argv, DPUMESH_VERSION))
		return 0;
	log_register_types();
	auto app_args = app::eal_init(argc, argv);
	if (!app_args) {
		std::fprintf(stderr, "dpumesh: %s\n", app_args.error().message().c_str());
		return 1;
	}
	auto opts = app::parse_options(static_cast<int>(app_args->size()), app_args->data());
	status st = opts ? status::ok() : opts.error();
	if (st.is_ok() && !opts->cmdline_file.empty() && access(opts->cmdline_file.c_str(), R_OK))
		st = errorf("--cmdline-file %s: %s", opts->cmdline_file.c_str(), std::strerror(errno));
	if (!st.is_ok()) {
		std::fprintf(stderr, "dpumesh: %s\nTry 'dpumesh --help'.\n", st.message().c_str());
		dpumesh::eal_cleanup();
		return 2;
	}
	if (opts->interactive && !opts->stats_period_given)
		opts->stats_period = 0; /* as testpmd: no periodic stats under the prompt */

	const bool from_file = !opts->config_path.empty();
	auto cfg = from_file ? config::load_file(opts->config_path)
			     : config::load_string(embedded_default_config,
						   "<embedded conf/default.json>");
	std::unique_ptr<node::instance> n;
	st = cfg ? status::ok() : cfg.error().with_context("config");
	if (st.is_ok()) {
		app::apply_overrides(*opts, *cfg);
		st = app::check_dpa_backend(*cfg, DPUMESH_DOCA_BUILT != 0);
	}
	if (st.is_ok()) {
		node::options nopt;
		nopt.wait_pods = opts->wait_pods;
		nopt.pdump = true;
#if DPUMESH_DOCA_BUILT
		/* --dpa-backend doca: the node runs the DPA program dpacc built (docs/doca.md) */
		nopt.doca = {dpumesh_dpa, &dpumesh_dpa_tx_entry, &dpumesh_dpa_rx_entry,
			     &dpumesh_dpa_notify_rpc};
#endif
		auto r = node::create(*cfg, nopt);
		st = r ? status::ok() : r.error();
		if (r)
			n = std::move(*r);
	}
	if (st.is_ok())
		st = n->start();
	if (st.is_ok() && cfg->lcores.control_priority)
		st = lcore::set_control_priority(cfg->lcores.control_priority);
	if (!st.is_ok()) {
		n.reset(); /* what was built goes before EAL does */
		std::fprintf(stderr, "dpumesh: %s\n", st.message().c_str());
		dpumesh::eal_cleanup();
		return 1;
	}
	std::signal(SIGINT, on_signal);
	std::signal(SIGTERM, on_signal);

	app::options overrides = *opts;
	control::node ctl(*n, from_file,
			  [overrides](config::node_config &c) { app::apply_overrides(overrides, c); });
	ctl.stats_period.store(opts->stats_period);
	policy::cli::register_module(); /* the L7 policy module's console rows, telemetry */
	st = control::telemetry_register(ctl);
	if (!st.is_ok())
		DPUMESH_LOG(WARNING, main, "%s", st.message().c_str());
	std::printf("dpumesh: node %s up: %zu port(s), idle policy %s; %s\n",
		    cfg->node.name.c_str(), n->ports().size(),
		    std::string(config::to_string(cfg->lcores.idle)).c_str(),
		    opts->interactive ? "type 'help', 'quit' to stop" : "Ctrl-C to stop");
	std::fflush(stdout);

	app::stats_printer printer(ctl, opts->stats_full);
	int rc_exit = control_loop(*n, ctl, *opts, printer);
	control::telemetry_unregister();
	std::printf("dpumesh: stopping\n");
	n->stop(); /* pods go first, then the lcores */
	printer.print_final(stdout);
	n->drain();
	app::print_pools(stdout, *n); /* everything the data path took is back */
	n.reset();
	int rc = dpumesh::eal_cleanup();
	if (rc != 0)
		std::fprintf(stderr, "dpumesh: EAL cleanup: %s\n", rte_strerror(-rc));
	std::printf("dpumesh: stopped\n");
	return rc_exit;
}

} // namespace

int main(int argc, char **argv) { return run(argc, argv); }
