// SPDX-License-Identifier: BSD-3-Clause
// node::create: builds a node's resources in order; ~instance tears them down in reverse.
#include "dpumesh/node/node.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_pdump.h>

#include "dpumesh/common/log.h"
#include "dpumesh/region/region.h"
#include "dpumesh/wire/frame.h"
#if DPUMESH_NODE_DOCA
#include "internal/doca_side.h"
#endif

namespace dpumesh::node {

namespace {

/** Messages handed from port RX to the sidecar, and the ring between them. */
constexpr unsigned msg_pool_size = 4095;
constexpr unsigned ring_size = 4096;
/** rx_msgs only refusals take when the message pool is empty (docs/overload.md, "A reserve
 *  at port RX"): a request is then answered 503 overloaded, not dropped. */
constexpr unsigned msg_reserve_size = 1023;
/** Port RX -> sidecar: room for every rx_msg of both pools (an rte_ring holds size - 1), so
 *  a message is never refused by the ring, whatever the sidecar holds and however many
 *  workers share the pools. */
constexpr unsigned ingress_ring_size = 8192;
static_assert(ingress_ring_size - 1 >= msg_pool_size + msg_reserve_size,
	      "the ingress ring must hold every rx_msg");
/* Whole messages waiting for the sidecar at which port RX refuses a request (503
 * overloaded) instead of queueing it: config pools.network.backlog, by default a quarter of
 * the pool, 32 sidecar bursts. The 600 s soak saw the ring hold 3251 messages (the sidecar
 * waiting for room towards the DPA) and the reserve run out behind them. */
static_assert(msg_pool_size == 4095, "config pools.network's bounds are the pool's size");
/** Work handed from one sidecar shard to another (sidecar::handoff_item each). */
constexpr unsigned handoff_size = 16384;

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

/** A port TX stage's context owns its input ring. */
void free_tx_ctx(std::unique_ptr<port::tx_ctx> &c) noexcept
{
	rte_ring *r = c->in;
	c.reset(); /* frees what it holds and what is queued */
	rte_ring_free(r);
}

} // namespace

void internal::ring_free::operator()(rte_ring *r) const noexcept { rte_ring_free(r); }

instance::instance(const config::node_config &cfg, const options &opt) : _cfg(cfg), _opt(opt) {}

result<unsigned> instance::lcore_of(unsigned worker, const std::string &stage) const
{
	if (_workers.empty())
		return stage_lcore(_cfg, stage);
	return _workers[worker];
}

instance::~instance()
{
	drain();
	if (_pdump)
		rte_pdump_uninit();
	/* the rest: members, in reverse order of declaration */
}

void instance::drain() noexcept
{
	stop();
	_rx_view.clear();
	_worker_rx.clear();
	_rx.clear(); /* reassemblers give their held mbufs back */
	_tx_view.clear();
	for (auto &t : _tx)
		if (t)
			free_tx_ctx(t); /* zero-copy frames still queued complete into the sidecar */
	_tx.clear();
	_shard_view.clear();
	_sidecars.clear(); /* each frees what waits on its hand-off ring */
	_emu.reset();
#if DPUMESH_NODE_DOCA
	_doca.reset(); /* after the sidecars: their dropped commands' hbufs went back to it */
#endif
	for (auto *rings : {&_ingress, &_refusals})
		for (auto &r : *rings) {
			void *m = nullptr;
			while (r && rte_ring_dequeue(r.get(), &m) == 0)
				port::rx_msg_free(static_cast<port::rx_msg *>(m));
		}
}

result<std::unique_ptr<instance>> create(const config::node_config &cfg, const options &opt)
{
	if (cfg.dpa.backend == config::dpa_backend::doca) {
#if DPUMESH_NODE_DOCA
		/* what the DOCA node does not carry yet (docs/doca.md, "Not written yet") */
		if (!cfg.ports.empty())
			return errorf("dpa backend \"doca\": ports (Case 1 and 2) need the Arm-side DMA "
				      "and network buffers in the DPU memory, not written yet; a DOCA "
				      "node serves pods on this node only (docs/doca.md)");
		if (cfg.lcores.workers > 1)
			return errorf("dpa backend \"doca\": one worker lcore (the Arm's hbufs and "
				      "give-back rings have one consumer); %s is %u",
				      cfg.where("/lcores/workers").c_str(), cfg.lcores.workers);
#else
		return errorf("dpa backend \"doca\": this build has no DOCA backend (configure with "
			      "-DDPUMESH_DOCA=ON where DOCA is installed, docs/doca.md); use "
			      "--dpa-backend emu");
#endif
	}
	if (cfg.dma.backend == config::dma_backend::dmadev && cfg.dma.device.empty())
		return errorf("dma backend dmadev needs a device: dmadev:NAME");
	std::unique_ptr<instance> n(new instance(cfg, opt));
	status st = n->build();
	if (!st.is_ok())
		return st; /* ~instance frees what was built */
	return n;
}

status instance::build()
{
	auto pool = port::create_pktmbuf_pool(_cfg);
	if (!pool)
		return pool.error().with_context("mempool");
	_pkts.reset(*pool);
	auto ports = port::open_all(_cfg, _pkts.get());
	if (!ports)
		return ports.error().with_context("ports");
	_ports.list = std::move(*ports);

	_msgs.reset(rte_mempool_create("dpumesh_rxmsg", msg_pool_size, sizeof(port::rx_msg), 64, 0,
				       nullptr, nullptr, nullptr, nullptr,
				       static_cast<int>(rte_socket_id()), 0));
	if (!_msgs)
		return errorf("mempool: message pool: %s", rte_strerror(rte_errno));
	/* no per-lcore cache: what is in the reserve is what refusals can still take */
	_msg_reserve.reset(rte_mempool_create("dpumesh_rxref", msg_reserve_size,
					      sizeof(port::rx_msg), 0, 0, nullptr, nullptr, nullptr,
					      nullptr, static_cast<int>(rte_socket_id()), 0));
	if (!_msg_reserve)
		return errorf("mempool: message reserve: %s", rte_strerror(rte_errno));
	const unsigned nw = _cfg.lcores.workers ? _cfg.lcores.workers : 1;
	if (nw > 1 && !_cfg.lcores.stages.empty())
		return errorf("lcores: %s: stage placement is for one worker; with %u workers each "
			      "runs every stage of its flow on its own lcore (remove it, or set "
			      "/lcores/workers to 1)",
			      _cfg.where("/lcores/stages").c_str(), nw);
	if (nw > 1) {
		/* worker k runs on the k-th worker lcore: every stage of its flow, run to completion */
		unsigned l = rte_get_next_lcore(-1, 1, 0);
		for (unsigned k = 0; k < nw && l < RTE_MAX_LCORE; k++, l = rte_get_next_lcore(l, 1, 0))
			_workers.push_back(l);
		if (_workers.size() < nw)
			return errorf("lcores: %s: %u workers need %u worker lcores, EAL has %zu (e.g. "
				      "--lcores 0@0,1@1,2@1 puts two on core 1)",
				      _cfg.where("/lcores/workers").c_str(), nw, nw, _workers.size());
	}
	for (unsigned k = 0; k < nw; k++) {
		/* per worker: port RX -> its sidecar shard (SP/SC); one worker keeps the old name */
		std::string name = k == 0 ? "dpumesh_ingress" : "dpumesh_ingress" + std::to_string(k);
		_ingress.emplace_back(rte_ring_create(name.c_str(), ingress_ring_size,
						      static_cast<int>(rte_socket_id()),
						      RING_F_SP_ENQ | RING_F_SC_DEQ));
		if (!_ingress.back())
			return errorf("ring: ingress ring: %s", rte_strerror(rte_errno));
		/* port RX's refusals, apart: the sidecar takes them every poll; as large, so
		 * never full either */
		name = "dpumesh_refusals" + std::to_string(k);
		_refusals.emplace_back(rte_ring_create(name.c_str(), ingress_ring_size,
						       static_cast<int>(rte_socket_id()),
						       RING_F_SP_ENQ | RING_F_SC_DEQ));
		if (!_refusals.back())
			return errorf("ring: refusal ring: %s", rte_strerror(rte_errno));
		if (nw == 1)
			continue;
		name = "dpumesh_handoff" + std::to_string(k);
		_handoff.emplace_back(sidecar::create_handoff_ring(name.c_str(), handoff_size));
		if (!_handoff.back())
			return errorf("ring: hand-off ring: %s", rte_strerror(rte_errno));
	}
	_runner = std::make_unique<lcore::runner>(_cfg.lcores);

	status st = build_port_stages();
	if (st.is_ok())
		st = build_mesh();
	if (!st.is_ok())
		return st.with_context("lcores");
	if (_opt.wait_pods)
		_runner->set_forwarding(false); /* until wait_pods pods are there */
	if (_opt.pdump) {
		/* dpdk-dumpcap / dpdk-pdump attach as secondary processes through this */
		_pdump = rte_pdump_init() == 0;
		if (!_pdump)
			DPUMESH_LOG(WARNING, main, "packet capture (rte_pdump_init) unavailable: %s",
				    rte_strerror(rte_errno));
	}
	return status::ok();
}

/**
 * Port RX per worker (worker k polls queue q of every port where q % workers == k, with its
 * own reassembler); port TX per external port: one TX queue and an SP ring per worker
 * where the port has as many TX queues, else one queue fed by an MP ring (worker 0 sends).
 */
status instance::build_port_stages()
{
	const unsigned nw = static_cast<unsigned>(_ingress.size());
	/* reassembly holds mbufs of the packet pool that RX refills from and egress frames
	 * in: a quarter of it for all workers, half of a worker's for one source, so that
	 * one sender of fragments that never complete cannot empty it (docs/wire.md) */
	const wire::reasm_config rc = wire::reasm_config_for_pool(_cfg.mempool.mbufs, nw);
	if (!_ports.list.empty())
		DPUMESH_LOG(INFO, port, "reassembly: at most %u mbufs of the packet pool a worker, "
			    "%u a source (a message of more frames, %llu KiB at MTU 1500, is never "
			    "reassembled)",
			    rc.max_mbufs, rc.max_mbufs_per_source,
			    static_cast<unsigned long long>(rc.max_mbufs_per_source) *
				    wire::detail::max_payload(1500, false) / 1024);
	for (unsigned k = 0; k < nw && !_ports.list.empty(); k++) {
		auto l = lcore_of(k, "port_rx");
		if (!l)
			return l.error();
		auto ctx = std::make_unique<port::rx_ctx>();
		ctx->mesh_port_be = rte_cpu_to_be_16(_cfg.node.mesh_port);
		if (_cfg.node.ipv4)
			ctx->ip4 = wire::endpoint::from_v4(_cfg.node.ipv4->s_addr, 0);
		if (_cfg.node.ipv6)
			ctx->ip6 = wire::endpoint::from_v6(_cfg.node.ipv6->s6_addr, 0);
		ctx->max_message = rc.max_message;
		ctx->msg_pool = _msgs.get();
		ctx->reserve_pool = _msg_reserve.get();
		ctx->next = _ingress[k].get();
		ctx->refusals = _refusals[k].get();
		ctx->backlog_limit = _cfg.pools.network_backlog;
		ctx->stall_tsc = port::rx_ctx::stall_tsc_for(_cfg.lcores.max_sleep_us);
		const std::string rname = "rx_reasm" + std::to_string(k);
		auto reasm = wire::reassembler::create(rc, rname.c_str(),
						       static_cast<int>(rte_socket_id()));
		if (!reasm)
			return reasm.error();
		ctx->reasm = std::move(*reasm);
		for (const port::port_info &p : _ports.list)
			for (uint16_t q = 0; q < p.nb_rxq; q++)
				if (q % nw == k)
					ctx->queues.push_back({p.port_id, q});
		_worker_rx.push_back(nullptr);
		if (ctx->queues.empty() && k > 0)
			continue; /* more workers than queues: this one serves pods only */
		_worker_rx.back() = ctx.get();
		_rx_view.push_back(ctx.get());
		_rx.push_back(std::move(ctx));
		status st = _runner->add(*l, port::rx_stage(*_rx.back()));
		if (!st.is_ok())
			return st;
	}
	for (const port::port_info &p : _ports.list) {
		if (p.role != config::port_role::external)
			continue;
		const bool per_worker = p.nb_txq >= nw;
		for (unsigned k = 0; k < (per_worker ? nw : 1); k++) {
			auto ctx = std::make_unique<port::tx_ctx>();
			ctx->port = p.port_id;
			ctx->queue = static_cast<uint16_t>(k);
			/* what it may owe a peer that takes nothing for a while (docs/overload.md) */
			const size_t ci = static_cast<size_t>(&p - _ports.list.data());
			if (status st = ctx->set_backlog(_cfg.tx_backlog_of(_cfg.ports[ci])); !st.is_ok())
				return errorf("port %s: %s", p.name.c_str(), st.message().c_str());
			std::string rname = "dpumesh_tx" + std::to_string(p.port_id);
			if (k)
				rname += "_" + std::to_string(k);
			const unsigned flags = per_worker || nw == 1 ? RING_F_SP_ENQ | RING_F_SC_DEQ
								    : RING_F_SC_DEQ;
			ctx->in = rte_ring_create(rname.c_str(), ring_size,
						  static_cast<int>(rte_socket_id()), flags);
			if (!ctx->in)
				return errorf("port %s: TX ring: %s", p.name.c_str(),
					      rte_strerror(rte_errno));
			_tx_view.push_back(ctx.get());
			_tx.push_back(std::move(ctx));
			auto l = lcore_of(k, "port_tx");
			status st = l ? _runner->add(*l, port::tx_stage(*_tx.back())) : l.error();
			if (!st.is_ok())
				return st;
		}
	}
	return status::ok();
}

/**
 * Port RX k's own answers (port::rx_answers): on each external port it polls whose port TX
 * stage runs on its lcore (TX queue k where the port has one per worker; queue 0 for worker
 * 0 otherwise), with shard k's hop name and message ids nw + k + 2nw j (the shards send k +
 * 2nw j). A port without such a queue keeps the sidecar's path, said in the log.
 */
void instance::attach_rx_answers(unsigned k, const sidecar::stage &shard)
{
	port::rx_ctx &rx = *_worker_rx[k];
	const unsigned nw = static_cast<unsigned>(_ingress.size());
	std::optional<wire::endpoint> ep4, ep6;
	if (_cfg.node.ipv4)
		ep4 = wire::endpoint::from_v4(_cfg.node.ipv4->s_addr, _cfg.node.mesh_port);
	if (_cfg.node.ipv6)
		ep6 = wire::endpoint::from_v6(_cfg.node.ipv6->s6_addr, _cfg.node.mesh_port);
	auto answers = std::make_unique<port::rx_answers>(_cfg.node.mac, ep4, ep6, shard.hop(),
							  nw + k, 2 * nw);
	auto rx_lcore = lcore_of(k, "port_rx");
	bool any = false;
	for (size_t i = 0; i < _ports.list.size(); i++) {
		const port::port_info &p = _ports.list[i];
		if (p.role != config::port_role::external ||
		    std::none_of(rx.queues.begin(), rx.queues.end(),
				 [&](const port::rx_ctx::queue &q) { return q.port == p.port_id; }))
			continue;
		const port::tx_ctx *here = nullptr;
		for (const port::tx_ctx *t : _tx_view) {
			auto tx_lcore = lcore_of(t->queue, "port_tx");
			if (t->port == p.port_id && rx_lcore && tx_lcore && *tx_lcore == *rx_lcore)
				here = t;
		}
		if (here) {
			answers->attach(p.port_id, here, _cfg.ports[i].mtu);
			any = true;
			DPUMESH_LOG(INFO, port, "port %s: port RX %u answers a saturated service's "
				    "requests itself, out of TX queue %u", p.name.c_str(), k, here->queue);
		} else {
			DPUMESH_LOG(INFO, port, "port %s: port RX %u hands a saturated service's "
				    "requests to the sidecar to answer: no TX queue of the port on its "
				    "lcore (%u TX queues for %u workers)", p.name.c_str(), k, p.nb_txq, nw);
		}
	}
	if (any)
		rx.answers = std::move(answers);
}

/** Pods: the registry and its socket, the DPA runtime, the sidecar shards; their stages. */
status instance::build_mesh()
{
	const unsigned nw = static_cast<unsigned>(_ingress.size());
	/* each shard owns DPA threads t % workers == k: a multiple of the workers, at least one each */
	unsigned nb_threads = std::max(_cfg.dpa.threads, nw);
	nb_threads = (nb_threads + nw - 1) / nw * nw;
	if (nb_threads > 16)
		return errorf("%s: %u DPA threads for %u workers (at most 16)",
			      _cfg.where("/dpa/threads").c_str(), nb_threads, nw);

	_registry = std::make_unique<pod_registry>(_cfg.pools, _cfg.services, nb_threads + nw);
	if (_cfg.dma.backend == config::dma_backend::dmadev) {
		/* pod memory must be known to DPDK for a dmadev to reach it (IOVA rule, dma.md) */
		_registry->set_region_hook([](const region &r, bool add) {
			return add ? dpdk_register_region(r, nullptr) : dpdk_unregister_region(r, nullptr);
		});
	}
	_nb_dpa_threads = nb_threads;
	status st = status::ok();
	dpa::arm_side side;
	if (_cfg.dpa.backend == config::dpa_backend::doca) {
#if DPUMESH_NODE_DOCA
		/* pods register over DOCA comch and their memory is the DPA's to reach */
		auto d = internal::doca_side::create(_cfg, _opt.doca, *_registry, nb_threads);
		if (!d)
			return d.error().with_context("DPA on DOCA");
		_doca = std::move(*d);
		side = _doca->side();
#endif
	} else {
		_registrar = std::make_unique<registrar>(*_registry);
		st = _registrar->listen(_cfg.node.control_socket)
			     .with_context(_cfg.where("/node/control_socket") + ": control socket");
		if (!st.is_ok())
			return st;
		auto e = dpa::emulator::create(_cfg, *_registry, nb_threads);
		if (!e)
			return e.error().with_context("DPA emulator");
		_emu = std::move(*e);
		side = _emu->side();
	}

	sidecar::shard_info shard;
	shard.count = nw;
	for (auto &r : _handoff)
		shard.handoff.push_back(r.get());
	for (unsigned k = 0; k < nw; k++) {
		sidecar::network net;
		net.ingress = _ingress[k].get();
		net.refusals = _refusals[k].get();
		net.rx_msgs = msg_pool_size;
		net.pkts = _pkts.get();
		net.shard = k;
		net.nb_shards = nw;
		net.id_step = 2 * nw; /* ids k + 2nw j; nw + k + 2nw j are port RX k's */
		for (size_t i = 0; i < _ports.list.size(); i++) {
			const port::port_info &p = _ports.list[i];
			sidecar::network::port np;
			np.port_id = p.port_id;
			np.mtu = _cfg.ports[i].mtu;
			np.external = p.role == config::port_role::external;
			rte_eth_dev_info info{};
			np.zero_copy = rte_eth_dev_info_get(p.port_id, &info) == 0 &&
				       (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS);
			/* its own TX queue's ring where the port has one per worker, else the shared one */
			for (port::tx_ctx *t : _tx_view)
				if (t->port == p.port_id && (t->queue == k || !np.tx))
					np.tx = t->in;
			net.ports.push_back(np);
		}
		shard.index = k;
		if (k > 0) /* one set of rate-limit buckets for the node */
			shard.share_limits = _sidecars.front()->policy().get();
		auto s = sidecar::stage::create(_cfg, *_registry, side, net, shard);
		if (!s)
			return s.error();
		_sidecars.push_back(std::move(*s));
		_shard_view.push_back(_sidecars.back().get());
		/* worker k's port RX refuses what shard k marks saturated (docs/overload.md) */
		if (k < _worker_rx.size() && _worker_rx[k]) {
			_worker_rx[k]->gate = &_sidecars.back()->gate();
			attach_rx_answers(k, *_sidecars.back());
		}

		auto l = lcore_of(k, "sidecar");
		st = l ? _runner->add(*l, _sidecars.back()->lcore_stage()) : l.error();
		if (!st.is_ok())
			return st;
		if (!_emu)
			continue; /* DOCA: the DPA runs its own threads */
		l = lcore_of(k, "dpa");
		if (!l)
			return l.error();
		for (unsigned t = k; t < _emu->nb_threads(); t += nw) {
			st = _runner->add(*l, _emu->tx_stage(t));
			if (st.is_ok())
				st = _runner->add(*l, _emu->rx_stage(t));
			if (!st.is_ok())
				return st;
		}
	}
	return status::ok();
}

status instance::start()
{
	status st = _runner->launch();
	if (!st.is_ok())
		return st.with_context("lcores");
#if DPUMESH_NODE_DOCA
	if (_doca) /* the kernels' first activations, the sidecar polling */
		st = _doca->start_threads().with_context("DPA on DOCA");
#endif
	return st;
}

void instance::stop() noexcept
{
	if (_stopped)
		return;
	_stopped = true;
	/* pods go first, while the DPA threads still run and can report quiescence */
	_registrar.reset();
#if DPUMESH_NODE_DOCA
	if (_doca)
		_doca->close_pods();
#endif
	if (_runner)
		_runner->stop();
#if DPUMESH_NODE_DOCA
	if (_doca) { /* the kernels finish; their memory is freed only after (drain) */
		status st = _doca->stop();
		if (!st.is_ok())
			DPUMESH_LOG(ERR, dpa, "%s", st.message().c_str());
	}
#endif
	if (_emu) { /* the kernels finish what they started, as DOCA threads do */
		status st = _emu->stop();
		if (!st.is_ok())
			DPUMESH_LOG(ERR, dpa, "%s", st.message().c_str());
	}
}

void instance::watch_control(uint64_t begin_ns) noexcept
{
	/* one schedstat read per pass (the control loop's is every 5 ms): a control-path file */
	const int tid = static_cast<int>(gettid());
	uint64_t oncpu = 0, runq = 0;
	const bool known = lcore::read_schedstat(tid, &oncpu, &runq);
	const uint64_t end = lcore::mono_ns();
	const uint64_t stall_ns = uint64_t{control_stall_ms} * 1000000ull;
	_watch.passes++;
	if (end - begin_ns >= stall_ns)
		_watch.slow_passes++;
	if (_last_pass_ns != 0 && tid == _control_tid) {
		const uint64_t gap = end - _last_pass_ns;
		_watch.worst_gap_ns = std::max(_watch.worst_gap_ns, gap);
		if (gap >= stall_ns) {
			_watch.stalls++;
			auto ms = [](uint64_t ns) { return static_cast<unsigned long long>(ns / 1000000); };
			char sched[96] = "";
			if (known)
				std::snprintf(sched, sizeof(sched),
					      ": on a CPU %llu ms, waiting for one %llu ms, the rest asleep "
					      "or blocked", ms(oncpu - _last_oncpu_ns),
					      ms(runq - _last_runq_ns));
			DPUMESH_LOG(WARNING, main,
				    "control thread: %llu ms since its previous pass, this one %llu ms%s "
				    "(registrations and unregistrations waited as long)",
				    ms(gap), ms(end - begin_ns), sched);
		}
	}
	_control_tid = tid;
	_last_pass_ns = end;
	_last_oncpu_ns = oncpu;
	_last_runq_ns = runq;
}

unsigned instance::poll_control() noexcept
{
	unsigned n = 0;
	const uint64_t begin = lcore::mono_ns();
	if (_registrar)
		n = _registrar->poll(); /* pod registrations, unregistrations, crashes */
#if DPUMESH_NODE_DOCA
	else if (_doca && !_stopped)
		n = _doca->poll(); /* the same over DOCA comch */
#endif
	else
		return 0;
	watch_control(begin);
	if (_opt.wait_pods && _registry->nb_pods() >= _opt.wait_pods) {
		std::printf("dpumesh: %u pod(s) registered: ports started\n", _registry->nb_pods());
		std::fflush(stdout);
		_opt.wait_pods = 0;
		_runner->set_forwarding(true);
	}
	return n;
}

} // namespace dpumesh::node
