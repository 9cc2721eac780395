// SPDX-License-Identifier: BSD-3-Clause
// Port bring-up and tear-down on DPDK ethdev.
#include "dpumesh/port/port.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>

#include "dpumesh/common/log.h"
#include "dpumesh/common/unique_fd.h"

namespace dpumesh::port {

namespace {

/** The device name part of devargs: "net_pcap0,rx_pcap=x" -> "net_pcap0". */
std::string devargs_name(const std::string &dev)
{
	return dev.substr(0, dev.find(','));
}

/**
 * Whether a socket of this network namespace listens on `path` (/proc/net/unix: the
 * __SO_ACCEPTCON flag, 0x10000, on a line whose last column is the path). Answers without
 * connecting: a connection that closes at once can crash a live memif server (DPDK 22.11's
 * interrupt thread panics on the fd it loses), so a live node must not be probed that way.
 */
bool unix_socket_listening(const std::string &path)
{
	FILE *f = std::fopen("/proc/net/unix", "re");
	if (!f)
		return false;
	char line[4096];
	bool listening = false;
	while (!listening && std::fgets(line, sizeof(line), f)) {
		unsigned long flags = 0;
		int path_at = -1;
		if (std::sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %n", &flags, &path_at) < 1 ||
		    path_at < 0)
			continue;
		std::string p(line + path_at);
		while (!p.empty() && (p.back() == '\n' || p.back() == ' '))
			p.pop_back();
		listening = (flags & 0x10000) && p == path;
	}
	std::fclose(f);
	return listening;
}

/**
 * A memif server's socket left behind by a node that was killed makes the probe fail with
 * "Address already in use". Nobody answering on it means it is stale: remove it. A socket
 * someone listens on belongs to another node: say so. A listener in this network namespace
 * is found without connecting to it; one in another namespace (the path is reachable across
 * them) is found by a connection, the only way left.
 */
status clear_stale_memif_socket(const std::string &dev)
{
	if (dev.rfind("net_memif", 0) != 0 || dev.find("role=client") != std::string::npos)
		return status::ok();
	size_t at = dev.find("socket=");
	if (at == std::string::npos)
		return status::ok();
	std::string path = dev.substr(at + 7, dev.find(',', at) - at - 7);
	struct stat stt;
	if (path.empty() || path[0] == '@' || lstat(path.c_str(), &stt) != 0 || !S_ISSOCK(stt.st_mode))
		return status::ok();
	sockaddr_un sa{};
	sa.sun_family = AF_UNIX;
	if (path.size() >= sizeof(sa.sun_path))
		return status::ok();
	std::memcpy(sa.sun_path, path.c_str(), path.size());
	if (unix_socket_listening(path))
		return errorf("memif socket %s is in use by another process (another node?)",
			      path.c_str());
	unique_fd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	if (!fd)
		return status::ok();
	if (connect(fd.get(), reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0)
		return errorf("memif socket %s is in use by another process (another node?)",
			      path.c_str());
	if (errno == ECONNREFUSED && unlink(path.c_str()) == 0)
		DPUMESH_LOG(NOTICE, port, "removed stale memif socket %s", path.c_str());
	return status::ok();
}

result<uint16_t> find_or_probe(const config::port_config &pc, bool &hotplugged)
{
	uint16_t id;
	std::string name = devargs_name(pc.dev);
	hotplugged = false;
	if (rte_eth_dev_get_port_by_name(name.c_str(), &id) == 0) {
		if (name != pc.dev)
			return errorf("device %s already exists (from --vdev?); give only its name "
				      "in \"dev\", or drop it from the EAL command line",
				      name.c_str());
		return id;
	}
	const bool bare = name == pc.dev;
	if (bare && name.rfind("net_", 0) != 0 && name.find(':') == std::string::npos)
		return errorf("device \"%s\" not found: give a PCI address, vdev devargs, or "
			      "create it with EAL --vdev",
			      name.c_str());
	if (status st = clear_stale_memif_socket(pc.dev); !st.is_ok())
		return st;
	/* A bare vdev name is probed without arguments (net_ring0, net_null0 need none). */
	int rc = rte_dev_probe(pc.dev.c_str());
	if (rc < 0 && bare)
		return errorf("device \"%s\" not found and cannot be created without arguments "
			      "(%s): create it with EAL --vdev (e.g. --vdev %s,rx_pcap=FILE) or "
			      "give full devargs in \"dev\"",
			      name.c_str(), rte_strerror(-rc), name.c_str());
	if (rc < 0)
		return errorf("probing \"%s\": %s", pc.dev.c_str(), rte_strerror(-rc));
	if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0)
		return errorf("probing \"%s\" created no ethdev named %s", pc.dev.c_str(),
			      name.c_str());
	hotplugged = true;
	return id;
}

status configure(const config::port_config &pc, port_info &p, rte_mempool *pool)
{
	rte_eth_dev_info info{};
	int rc = rte_eth_dev_info_get(p.port_id, &info);
	if (rc != 0)
		return errorf("device info: %s", rte_strerror(-rc));
	p.driver = info.driver_name ? info.driver_name : "?";
	if (pc.rx_queues > info.max_rx_queues || pc.tx_queues > info.max_tx_queues)
		return errorf("%s supports at most %u RX / %u TX queues, config asks %u / %u",
			      p.driver.c_str(), info.max_rx_queues, info.max_tx_queues,
			      pc.rx_queues, pc.tx_queues);
	p.nb_rxq = pc.rx_queues;
	p.nb_txq = pc.tx_queues;

	rte_eth_conf conf{};
	if (pc.rx_queues > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* the port's checksum verdicts where it can give them (mlx5): parse_frame takes them
	 * and checks in software only frames that come without one (net_pcap, net_ring,
	 * net_null offer none; docs/wire.md, "Receivers") */
	conf.rxmode.offloads |=
		(RTE_ETH_RX_OFFLOAD_UDP_CKSUM | RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) & info.rx_offload_capa;
	if (conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_UDP_CKSUM)
		DPUMESH_LOG(INFO, port, "port %s: %s checks RX checksums", p.name.c_str(),
			    p.driver.c_str());
	/* DPDK 22.11's memif server accepts a client that opens fewer queues than it has and
	 * leaves its other queues on ring 0: their RX reads the client's first ring beside queue
	 * 0 (frames taken twice, from two lcores) and their TX writes into it */
	if (p.driver == "net_memif" && (pc.rx_queues > 1 || pc.tx_queues > 1))
		DPUMESH_LOG(WARNING, port,
			    "port %s: net_memif with %u RX and %u TX queues: its peer must open as "
			    "many (dpumesh-replay --queues %u); a memif server left with fewer by its "
			    "client maps the others onto the client's first ring",
			    p.name.c_str(), pc.rx_queues, pc.tx_queues, pc.rx_queues);
	rc = rte_eth_dev_configure(p.port_id, pc.rx_queues, pc.tx_queues, &conf);
	if (rc != 0)
		return errorf("configure: %s", rte_strerror(-rc));

	uint16_t nb_rxd = pc.rx_desc, nb_txd = pc.tx_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(p.port_id, &nb_rxd, &nb_txd);
	if (rc != 0)
		return errorf("descriptor counts: %s", rte_strerror(-rc));
	if (rte_eth_dev_set_mtu(p.port_id, pc.mtu) != 0)
		DPUMESH_LOG(INFO, port, "port %s: driver %s keeps its MTU (asked %u)",
			    p.name.c_str(), p.driver.c_str(), pc.mtu);

	int socket = rte_eth_dev_socket_id(p.port_id);
	for (uint16_t q = 0; q < pc.rx_queues; q++) {
		rc = rte_eth_rx_queue_setup(p.port_id, q, nb_rxd, socket, nullptr, pool);
		if (rc != 0 && p.driver == "net_pcap")
			return errorf("RX queue %u: %s (with infinite_rx=1, net_pcap keeps the whole "
				      "capture in mbufs: /mempool/mbufs must exceed its frame count)",
				      q, rte_strerror(-rc));
		if (rc != 0)
			return errorf("RX queue %u: %s", q, rte_strerror(-rc));
	}
	for (uint16_t q = 0; q < pc.tx_queues; q++) {
		rc = rte_eth_tx_queue_setup(p.port_id, q, nb_txd, socket, nullptr);
		if (rc != 0)
			return errorf("TX queue %u: %s", q, rte_strerror(-rc));
	}
	rc = rte_eth_dev_start(p.port_id);
	if (rc != 0)
		return errorf("start: %s", rte_strerror(-rc));
	if (pc.promiscuous) {
		rc = rte_eth_promiscuous_enable(p.port_id);
		if (rc != 0 && rc != -ENOTSUP)
			DPUMESH_LOG(WARNING, port, "port %s: promiscuous mode: %s", p.name.c_str(),
				    rte_strerror(-rc));
	}
	return status::ok();
}

void close_one(port_info &p)
{
	rte_eth_dev_info info{};
	bool have_dev = rte_eth_dev_info_get(p.port_id, &info) == 0 && info.device;
	rte_eth_dev_stop(p.port_id);
	rte_eth_dev_close(p.port_id);
	if (p.hotplugged && have_dev)
		rte_dev_remove(info.device);
}

} // namespace

const char *pktmbuf_pool_ops() noexcept
{
	if (const char *user = rte_mbuf_user_mempool_ops())
		return user;
	for (uint32_t i = 0; i < rte_mempool_ops_table.num_ops; i++)
		if (std::strcmp(rte_mempool_ops_table.ops[i].name, "lf_stack") == 0)
			return "lf_stack";
	return rte_mbuf_best_mempool_ops();
}

size_t pktmbuf_obj_pad(size_t obj_size, size_t page) noexcept
{
	if (page == 0 || obj_size > page || obj_size * 2 <= page)
		return 0;
	return page + RTE_CACHE_LINE_SIZE - obj_size;
}

namespace {

/* rte_pktmbuf_pool_create_by_ops()'s steps with `pad` unused bytes after each mbuf's data
 * room (the mempool element is longer than the mbuf, its buffer and its private area: the
 * mbufs, their buf_len and headroom are the same as without it) */
rte_mempool *padded_pktmbuf_pool(const config::mempool_config &mc, size_t pad, const char *ops)
{
	rte_mempool *mp = rte_mempool_create_empty(
		"dpumesh_pkt", mc.mbufs, static_cast<unsigned>(sizeof(rte_mbuf) + mc.data_room + pad),
		mc.cache, sizeof(rte_pktmbuf_pool_private), static_cast<int>(rte_socket_id()), 0);
	if (!mp)
		return nullptr;
	rte_pktmbuf_pool_private priv{};
	priv.mbuf_data_room_size = mc.data_room;
	priv.mbuf_priv_size = 0;
	int rc = rte_mempool_set_ops_byname(mp, ops, nullptr);
	if (rc == 0) {
		rte_pktmbuf_pool_init(mp, &priv);
		rc = rte_mempool_populate_default(mp);
	}
	if (rc < 0) {
		rte_mempool_free(mp);
		rte_errno = -rc;
		return nullptr;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
	return mp;
}

} // namespace

result<rte_mempool *> create_pktmbuf_pool(const config::node_config &cfg)
{
	const char *ops = pktmbuf_pool_ops();
	/* DPDK places no mempool object across a page of the pool's page size; with --no-huge
	 * that is 4 KiB, so a 2368-byte mbuf took a page of its own and every mbuf header sat
	 * at the same page offset: all of them in one L1 set (12 ways) and 1/64 of L2's sets,
	 * the capture's mbufs net_pcap copies from too. Padded at the end to just past a page,
	 * objects are packed again, each a cache line further into its page, and most mbufs'
	 * header and frame still share a page (pktmbuf_obj_pad). net_pcap's rx_burst on the
	 * forward capture, three pools alternating in one process: 94-131 cycles a frame a
	 * page per mbuf, 73-80 padded at the end (78-97 padded in the private area, which puts
	 * the frame a page away from the header for half the mbufs). Hugepages hold many
	 * objects each: nothing to pad. */
	size_t pad = 0;
	if (!rte_eal_has_hugepages()) {
		rte_mempool_objsz sz;
		const uint32_t obj = rte_mempool_calc_obj_size(
			static_cast<uint32_t>(sizeof(rte_mbuf)) + cfg.mempool.data_room, 0, &sz);
		pad = pktmbuf_obj_pad(obj, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
	}
	rte_mempool *mp = pad ? padded_pktmbuf_pool(cfg.mempool, pad, ops)
			      : rte_pktmbuf_pool_create_by_ops("dpumesh_pkt", cfg.mempool.mbufs,
							       cfg.mempool.cache, 0,
							       cfg.mempool.data_room,
							       static_cast<int>(rte_socket_id()), ops);
	if (!mp)
		return errorf("creating the packet pool (%u mbufs of %u bytes, %s): %s "
			      "(with --no-huge, raise -m)",
			      cfg.mempool.mbufs, cfg.mempool.data_room, ops, rte_strerror(rte_errno));
	DPUMESH_LOG(INFO, port, "packet pool: %u mbufs of %u bytes, cache %u, %s%s", cfg.mempool.mbufs,
		    cfg.mempool.data_room, cfg.mempool.cache, ops,
		    pad ? ", each padded past a page" : "");
	return mp;
}

result<std::vector<port_info>> open_all(const config::node_config &cfg, rte_mempool *pool)
{
	std::vector<port_info> out;
	for (size_t i = 0; i < cfg.ports.size(); i++) {
		const config::port_config &pc = cfg.ports[i];
		port_info p;
		p.name = pc.name;
		p.role = pc.role;
		auto id = find_or_probe(pc, p.hotplugged);
		status st = id ? status::ok() : id.error();
		if (st.is_ok()) {
			p.port_id = *id;
			p.dev = devargs_name(pc.dev);
			st = configure(pc, p, pool);
			if (!st.is_ok())
				close_one(p);
		}
		if (!st.is_ok()) {
			close_all(out);
			std::string where = cfg.where("/ports/" + std::to_string(i) + "/dev");
			return st.with_context(where + ": port " + pc.name);
		}
		DPUMESH_LOG(INFO, port, "port %u: %s (%s, driver %s, %s)", p.port_id,
			    p.name.c_str(), p.dev.c_str(), p.driver.c_str(),
			    std::string(config::to_string(p.role)).c_str());
		out.push_back(std::move(p));
	}
	return out;
}

void close_all(std::vector<port_info> &ports)
{
	for (port_info &p : ports)
		close_one(p);
	ports.clear();
}

} // namespace dpumesh::port
