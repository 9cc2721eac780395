// SPDX-License-Identifier: BSD-3-Clause
// Network namespaces and veth pairs for tests that need real links (root only): ip(8)
// wrappers, a veth_pair that cleans up after itself, and running code inside a namespace.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "subprocess.h"

namespace dpumesh::test {

using namespace std::chrono_literals;

/** Full path of a program found in PATH or the sbin directories ("" if none). */
inline std::string which(const std::string &prog)
{
	std::string path = std::string(getenv("PATH") ? getenv("PATH") : "") + ":/usr/sbin:/sbin";
	std::istringstream dirs(path);
	for (std::string d; std::getline(dirs, d, ':');)
		if (!d.empty() && access((d + "/" + prog).c_str(), X_OK) == 0)
			return d + "/" + prog;
	return "";
}

/** Runs `ip ARGS...`; true on success. */
inline bool ip(std::vector<std::string> args)
{
	args.insert(args.begin(), which("ip"));
	auto [rc, out] = run_command(args, 10s);
	if (rc != 0)
		ADD_FAILURE() << "ip " << args[1] << ": " << out;
	return rc == 0;
}

/** Why veth/netns tests cannot run here ("" when they can). */
inline std::string netns_unavailable()
{
	if (geteuid() != 0)
		return "needs root (veth pairs and network namespaces)";
	if (which("ip").empty())
		return "needs the ip command (iproute2)";
	return "";
}

/** Runs fn in a thread that has joined network namespace ns (sockets made there stay there). */
template <typename Fn>
void in_netns(const std::string &ns, Fn &&fn)
{
	std::thread t([&] {
		int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
		ASSERT_GE(fd, 0) << ns;
		ASSERT_EQ(setns(fd, CLONE_NEWNET), 0) << std::strerror(errno);
		close(fd);
		fn();
	});
	t.join();
}

/**
 * Turns TX checksum offload off on a link of the calling thread's namespace. Over a veth
 * the kernel otherwise sends UDP with a partial checksum (the peer is trusted to know);
 * DPDK 22.11's af_packet PMD does not pass that on, so dpumesh, which checks UDP checksums
 * where the port gives no verdict, would drop a kernel client's frames.
 */
inline bool tx_checksum_off(const std::string &ifname)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	ethtool_value ev{};
	ev.cmd = ETHTOOL_STXCSUM;
	ev.data = 0;
	ifreq ifr{};
	std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
	ifr.ifr_data = reinterpret_cast<char *>(&ev);
	const int rc = ioctl(s, SIOCETHTOOL, &ifr);
	close(s);
	return rc == 0;
}

/** A veth pair named a/b in this namespace; b optionally moved into a new namespace. */
class veth_pair {
public:
	veth_pair(std::string a, std::string b, std::string ns = "") : _a(std::move(a)), _b(std::move(b)), _ns(std::move(ns))
	{
		run_command({which("ip"), "link", "del", _a}, 10s); /* left over by a killed run */
		if (!_ns.empty()) {
			run_command({which("ip"), "netns", "del", _ns}, 10s);
			ok = ip({"netns", "add", _ns});
		}
		ok = ok && ip({"link", "add", _a, "type", "veth", "peer", "name", _b}) &&
		     ip({"link", "set", _a, "up"});
		/* no IPv6 chatter (router solicitations) from the kernel on the DPDK side */
		run_command({which("sysctl"), "-qw", "net.ipv6.conf." + _a + ".disable_ipv6=1"}, 10s);
		if (ok && !_ns.empty())
			ok = ip({"link", "set", _b, "netns", _ns}) &&
			     ip({"-n", _ns, "link", "set", "lo", "up"}) &&
			     ip({"-n", _ns, "link", "set", _b, "up"});
		else if (ok)
			ok = ip({"link", "set", _b, "up"});
		/* whole UDP checksums from the kernel on both ends (tx_checksum_off) */
		ok = ok && tx_checksum_off(_a);
		if (ok && !_ns.empty())
			in_netns(_ns, [&] { ok = tx_checksum_off(_b); });
		else if (ok)
			ok = tx_checksum_off(_b);
	}
	~veth_pair()
	{
		run_command({which("ip"), "link", "del", _a}, 10s);
		if (!_ns.empty())
			run_command({which("ip"), "netns", "del", _ns}, 10s);
	}
	bool ok = true;

private:
	std::string _a, _b, _ns;
};

} // namespace dpumesh::test
