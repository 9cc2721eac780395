// SPDX-License-Identifier: BSD-3-Clause
// dpumesh: wires EAL, the config, ports and stages together; the main lcore runs control.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pdump.h>
#include <rte_ring.h>
#include <rte_ethdev.h>
#include <rte_version.h>

#include "dpumesh/abi/abi.h"
#include "dpumesh/config/config.h"
#include "dpumesh/console/console.h"
#include "dpumesh/control/control.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/common/log.h"
#include "dpumesh/app/options.h"
#include "dpumesh/port/port.h"
#include "dpumesh/podreg/registrar.h"
#include "dpumesh/policy/cli.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/port/tx.h"
#include "stats.h"

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

int fail(const char *what, const status &st)
{
	std::fprintf(stderr, "dpumesh: %s: %s\n", what, st.message().c_str());
	return 1;
}

/** The lcore a stage runs on: its mapping, or the first worker lcore. */
result<unsigned> stage_lcore(const config::node_config &cfg, const std::string &stage)
{
	auto it = cfg.lcores.stages.find(stage);
	if (it != cfg.lcores.stages.end())
		return it->second;
	unsigned l = rte_get_next_lcore(-1, 1, 0);
	if (l >= RTE_MAX_LCORE)
		return errorf("stage %s needs a worker lcore, and EAL has only the main one "
			      "(use e.g. -l 0-1)",
			      stage.c_str());
	return l;
}

void free_tx(std::vector<std::unique_ptr<port::tx_ctx>> &ctxs)
{
	for (auto &c : ctxs) {
		rte_ring *r = c->in;
		c.reset(); /* frees what it holds and what is queued */
		rte_ring_free(r);
	}
	ctxs.clear();
}

void drain_ingress(rte_ring *r)
{
	void *m = nullptr;
	while (rte_ring_dequeue(r, &m) == 0)
		port::rx_msg_free(static_cast<port::rx_msg *>(m));
}

int run(int argc, char **argv)
{
	bool want_version = false;
	if (app::wants_help_or_version(argc, argv, &want_version)) {
		if (want_version)
			std::printf("dpumesh %s (descriptor ABI %u, DPDK %s)\n", DPUMESH_VERSION,
				    DPUMESH_ABI_VERSION, rte_version());
		else
			std::fputs(app::usage(argv[0]).c_str(), stdout);
		return 0;
	}

	log_register_types();
	int nb_eal = rte_eal_init(argc, argv);
	if (nb_eal < 0) {
		std::fprintf(stderr, "dpumesh: EAL initialisation failed: %s\n",
			     rte_strerror(rte_errno));
		return 1;
	}
	argc -= nb_eal;
	argv += nb_eal;

	auto opts = app::parse_options(argc, argv);
	if (!opts) {
		std::fprintf(stderr, "dpumesh: %s\nTry 'dpumesh --help'.\n",
			     opts.error().message().c_str());
		rte_eal_cleanup();
		return 2;
	}
	if (!opts->cmdline_file.empty() && access(opts->cmdline_file.c_str(), R_OK) != 0) {
		std::fprintf(stderr, "dpumesh: --cmdline-file %s: %s\n", opts->cmdline_file.c_str(),
			     std::strerror(errno));
		rte_eal_cleanup();
		return 2;
	}
	/* as testpmd: no periodic stats under the prompt unless asked for */
	if (opts->interactive && !opts->stats_period_given)
		opts->stats_period = 0;

	auto cfg = opts->config_path.empty()
			   ? config::load_string(embedded_default_config, "<embedded conf/default.json>")
			   : config::load_file(opts->config_path);
	if (!cfg) {
		rte_eal_cleanup();
		return fail("config", cfg.error());
	}
	app::apply_overrides(*opts, *cfg);
	if (cfg->dpa.backend == config::dpa_backend::doca) {
		std::fprintf(stderr, "dpumesh: dpa backend \"doca\": this build has no DOCA SDK; "
				     "use --dpa-backend emu (see docs/deploy.md)\n");
		rte_eal_cleanup();
		return 1;
	}
	if (cfg->dma.backend == config::dma_backend::dmadev && cfg->dma.device.empty()) {
		std::fprintf(stderr, "dpumesh: --dma dmadev needs a device: dmadev:NAME\n");
		rte_eal_cleanup();
		return 2;
	}

	auto pool = port::create_pktmbuf_pool(*cfg);
	if (!pool) {
		rte_eal_cleanup();
		return fail("mempool", pool.error());
	}
	auto ports = port::open_all(*cfg, *pool);
	if (!ports) {
		rte_mempool_free(*pool);
		rte_eal_cleanup();
		return fail("ports", ports.error());
	}

	/* messages handed from port RX to the sidecar */
	rte_mempool *msg_pool = rte_mempool_create("dpumesh_rxmsg", 4095, sizeof(port::rx_msg),
						   64, 0, nullptr, nullptr, nullptr, nullptr,
						   static_cast<int>(rte_socket_id()), 0);
	if (!msg_pool) {
		port::close_all(*ports);
		rte_mempool_free(*pool);
		rte_eal_cleanup();
		return fail("mempool", errorf("message pool: %s", rte_strerror(rte_errno)));
	}
	/* whole messages from port RX to the sidecar (Case 2) */
	rte_ring *ingress = rte_ring_create("dpumesh_ingress", 4096, static_cast<int>(rte_socket_id()),
					    RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!ingress) {
		port::close_all(*ports);
		rte_mempool_free(msg_pool);
		rte_mempool_free(*pool);
		rte_eal_cleanup();
		return fail("ring", errorf("ingress ring: %s", rte_strerror(rte_errno)));
	}
	lcore::runner runner(cfg->lcores);
	std::vector<std::unique_ptr<port::rx_ctx>> rx_ctxs;
	std::vector<port::rx_ctx *> rx_view;
	status st = status::ok();

	if (!ports->empty()) {
		auto lcore = stage_lcore(*cfg, "port_rx");
		st = lcore ? status::ok() : lcore.error();
		if (st.is_ok()) {
			auto ctx = std::make_unique<port::rx_ctx>();
			ctx->mesh_port_be = rte_cpu_to_be_16(cfg->node.mesh_port);
			if (cfg->node.ipv4)
				ctx->ip4 = wire::endpoint::from_v4(cfg->node.ipv4->s_addr, 0);
			if (cfg->node.ipv6) {
				wire::endpoint e;
				std::memcpy(e.ip, cfg->node.ipv6->s6_addr, 16);
				ctx->ip6 = e;
			}
			ctx->max_message = wire::reasm_config{}.max_message;
			ctx->msg_pool = msg_pool;
			ctx->next = ingress;
			auto reasm = wire::reassembler::create(wire::reasm_config{}, "rx_reasm0",
							       static_cast<int>(rte_socket_id()));
			if (!reasm) {
				st = reasm.error();
			} else {
				ctx->reasm = std::move(*reasm);
			}
			for (const port::port_info &p : *ports)
				for (uint16_t q = 0; q < p.nb_rxq; q++)
					ctx->queues.push_back({p.port_id, q});
			if (st.is_ok())
				st = runner.add(*lcore, port::rx_stage(*ctx));
			rx_view.push_back(ctx.get());
			rx_ctxs.push_back(std::move(ctx));
		}
	}

	/* frames out: one port TX stage per external port (queue 0), fed by the sidecar */
	sidecar::network net;
	net.ingress = ingress;
	net.pkts = *pool;
	std::vector<std::unique_ptr<port::tx_ctx>> tx_ctxs;
	for (size_t i = 0; st.is_ok() && i < ports->size(); i++) {
		const port::port_info &p = (*ports)[i];
		sidecar::network::port np;
		np.port_id = p.port_id;
		np.mtu = cfg->ports[i].mtu;
		np.external = p.role == config::port_role::external;
		rte_eth_dev_info info{};
		np.zero_copy = rte_eth_dev_info_get(p.port_id, &info) == 0 &&
			       (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS);
		if (np.external) {
			auto ctx = std::make_unique<port::tx_ctx>();
			ctx->port = p.port_id;
			ctx->queue = 0;
			std::string rname = "dpumesh_tx" + std::to_string(p.port_id);
			ctx->in = rte_ring_create(rname.c_str(), 4096, static_cast<int>(rte_socket_id()),
						  RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (!ctx->in) {
				st = errorf("port %s: TX ring: %s", p.name.c_str(), rte_strerror(rte_errno));
				break;
			}
			np.tx = ctx->in;
			auto lcore = stage_lcore(*cfg, "port_tx");
			st = lcore ? runner.add(*lcore, port::tx_stage(*ctx)) : lcore.error();
			tx_ctxs.push_back(std::move(ctx));
		}
		net.ports.push_back(np);
	}

	/* pods: the registry, its control socket, the DPA emulator and the sidecar */
	pod_registry registry(cfg->pools, cfg->services, cfg->dpa.threads + 1);
	if (cfg->dma.backend == config::dma_backend::dmadev) {
		/* pod memory must be known to DPDK for a dmadev to reach it (IOVA rule, dma.md) */
		registry.set_region_hook([](const region &r, bool add) {
			return add ? dpdk_register_region(r, nullptr) : dpdk_unregister_region(r, nullptr);
		});
	}
	auto ctrl_srv = std::make_unique<registrar>(registry);
	std::unique_ptr<dpa::emulator> emu;
	std::unique_ptr<sidecar::stage> sidecar;
	if (st.is_ok())
		st = ctrl_srv->listen(cfg->node.control_socket)
			     .with_context(cfg->where("/node/control_socket") + ": control socket");
	if (st.is_ok()) {
		auto e = dpa::emulator::create(*cfg, registry, cfg->dpa.threads);
		st = e ? status::ok() : e.error().with_context("DPA emulator");
		if (e)
			emu = std::move(*e);
	}
	if (st.is_ok()) {
		auto s = sidecar::stage::create(*cfg, registry, *emu, net);
		st = s ? status::ok() : s.error();
		if (s)
			sidecar = std::move(*s);
	}
	if (st.is_ok()) {
		auto l = stage_lcore(*cfg, "sidecar");
		st = l ? runner.add(*l, sidecar->lcore_stage()) : l.error();
	}
	if (st.is_ok()) {
		auto l = stage_lcore(*cfg, "dpa");
		for (unsigned t = 0; l && st.is_ok() && t < emu->nb_threads(); t++) {
			st = runner.add(*l, emu->tx_stage(t));
			if (st.is_ok())
				st = runner.add(*l, emu->rx_stage(t));
		}
		if (!l)
			st = l.error();
	}
	if (opts->wait_pods)
		runner.set_forwarding(false); /* until --wait-pods pods are there */
	if (st.is_ok())
		st = runner.launch();
	if (!st.is_ok()) {
		ctrl_srv.reset();
		free_tx(tx_ctxs);
		sidecar.reset();
		emu.reset();
		rx_ctxs.clear();
		rte_ring_free(ingress);
		port::close_all(*ports);
		rte_mempool_free(msg_pool);
		rte_mempool_free(*pool);
		rte_eal_cleanup();
		return fail("lcores", st);
	}

	std::signal(SIGINT, on_signal);
	std::signal(SIGTERM, on_signal);

	/* dpdk-dumpcap / dpdk-pdump attach as secondary processes through this */
	int pdump_rc = rte_pdump_init();
	if (pdump_rc != 0)
		DPUMESH_LOG(WARNING, main, "packet capture (rte_pdump_init) unavailable: %s",
			    rte_strerror(rte_errno));

	const bool from_file = !opts->config_path.empty();
	app::options overrides = *opts;
	control::node node(*ports, rx_view, runner, *cfg, from_file,
			   [overrides](config::node_config &c) { app::apply_overrides(overrides, c); });
	node.stats_period.store(opts->stats_period);
	node.set_mesh(&registry, sidecar.get(), emu.get());
	policy::cli::register_module(); /* the L7 policy module's console rows, telemetry */
	st = control::telemetry_register(node);
	if (!st.is_ok())
		DPUMESH_LOG(WARNING, main, "%s", st.message().c_str());

	std::printf("dpumesh: node %s up: %zu port(s), idle policy %s; %s\n",
		    cfg->node.name.c_str(), ports->size(),
		    std::string(config::to_string(cfg->lcores.idle)).c_str(),
		    opts->interactive ? "type 'help', 'quit' to stop" : "Ctrl-C to stop");
	std::fflush(stdout);

	std::vector<port::tx_ctx *> tx_view;
	for (auto &t : tx_ctxs)
		tx_view.push_back(t.get());
	app::stats_printer printer(
		{&*ports, &rx_view, &runner, sidecar.get(), emu.get(), &registry, &tx_view});
	int rc_exit = 0;
	{
		console::console con(node);
		if (!opts->cmdline_file.empty()) {
			auto r = con.run_file(opts->cmdline_file);
			if (!r) {
				std::fprintf(stderr, "dpumesh: %s\n", r.error().message().c_str());
				rc_exit = 1;
				node.quit.store(true);
			}
		}
		if (opts->interactive && !node.quit.load()) {
			st = con.open_interactive();
			if (!st.is_ok()) {
				std::fprintf(stderr, "dpumesh: %s\n", st.message().c_str());
				rc_exit = 1;
				node.quit.store(true);
			}
		}
		const uint64_t hz = rte_get_tsc_hz();
		unsigned period = node.stats_period.load();
		unsigned snapshot_tick = 0;
		uint32_t snapshot_pods = UINT32_MAX;
		uint64_t next = rte_get_tsc_cycles() + period * hz;
		while (!g_quit && !node.quit.load()) {
			if (opts->interactive) {
				if (!con.poll(5))
					break;
			} else {
				usleep(5 * 1000);
			}
			ctrl_srv->poll(); /* pod registrations, unregistrations, crashes */
			if (opts->wait_pods && registry.nb_pods() >= opts->wait_pods) {
				std::printf("dpumesh: %u pod(s) registered: ports started\n", registry.nb_pods());
				std::fflush(stdout);
				opts->wait_pods = 0;
				runner.set_forwarding(true);
			}
			/* telemetry's copy of the pods: at once when pods come or go, else ~100 ms */
			if (++snapshot_tick % 20 == 0 || registry.nb_pods() != snapshot_pods) {
				snapshot_pods = registry.nb_pods();
				node.refresh_pods_snapshot();
			}
			unsigned p = node.stats_period.load();
			if (p != period) { /* set stats-period: restart the clock */
				period = p;
				next = rte_get_tsc_cycles() + period * hz;
			}
			if (period && rte_get_tsc_cycles() >= next) {
				char *buf = nullptr;
				size_t len = 0;
				FILE *mem = open_memstream(&buf, &len);
				if (mem) {
					printer.print_periodic(mem);
					std::fclose(mem);
					con.print_async(std::string(buf, len));
					std::free(buf);
				}
				next += period * hz;
			}
		}
		con.close_interactive();
	}
	control::telemetry_unregister();

	std::printf("dpumesh: stopping\n");
	/* pods go first, while the DPA threads still run and can report quiescence */
	ctrl_srv.reset();
	runner.stop();
	printer.print_final(stdout);
	rx_ctxs.clear(); /* reassemblers give their held mbufs back */
	drain_ingress(ingress);
	free_tx(tx_ctxs); /* zero-copy frames still queued complete into the sidecar */
	sidecar.reset();
	emu.reset();
	rte_ring_free(ingress);
	/* everything the data path took is back (a port still open may hold its RX ring:
	 * net_pcap's infinite_rx keeps the capture in mbufs) */
	std::printf("final mempool mbufs_in_use=%u rx_msgs_in_use=%u\n",
		    rte_mempool_in_use_count(*pool), rte_mempool_in_use_count(msg_pool));
	if (pdump_rc == 0)
		rte_pdump_uninit();
	port::close_all(*ports);
	rte_mempool_free(msg_pool);
	rte_mempool_free(*pool);
	int rc = rte_eal_cleanup();
	if (rc != 0)
		std::fprintf(stderr, "dpumesh: EAL cleanup: %s\n", rte_strerror(-rc));
	std::printf("dpumesh: stopped\n");
	return rc_exit;
}

} // namespace

int main(int argc, char **argv) { return run(argc, argv); }
