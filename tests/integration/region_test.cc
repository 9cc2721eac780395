// SPDX-License-Identifier: BSD-3-Clause
// Regions across real processes: a child exports, the parent imports, registers, translates
// the child's addresses and writes back; malformed exports are refused without fd leaks;
// DPDK external-memory registration on a real EAL with a dma_skeleton device.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>
#include <string>

#include <rte_dev.h>
#include <rte_memory.h>

#include "dpumesh/region/mkey_table.h"
#include "dpumesh/region/region.h"
#include "eal_env.h"

using namespace dpumesh;

namespace {

constexpr size_t region_len = 1 << 20;
constexpr size_t write_back_off = 12345;
const char write_back_msg[] = "written by the importer";

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 7 + 3 + (i >> 12)); }

int count_open_fds()
{
	DIR *d = opendir("/proc/self/fd");
	if (d == nullptr)
		return -1;
	int n = 0;
	while (readdir(d) != nullptr)
		n++;
	closedir(d);
	return n;
}

struct child_guard {
	pid_t pid = -1;
	~child_guard()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
};

/* The exporting pod: runs in a forked child, reports through its exit status. */
[[noreturn]] void exporter_child(int sock)
{
	auto r = region::create("dpumesh-region-test", region_len - 100);
	if (!r)
		_exit(10);
	if (r->size() < region_len || r->size() % r->page_size() != 0)
		_exit(11);
	/* Tell the importer where this lives first, so that it can keep its mapping elsewhere. */
	uint64_t where[2] = {r->remote_base(), r->size()};
	if (write(sock, where, sizeof(where)) != sizeof(where))
		_exit(16);
	auto *p = static_cast<uint8_t *>(r->data());
	for (size_t i = 0; i < r->size(); i++)
		p[i] = pattern(i);
	if (!r->export_to(sock, 42))
		_exit(12);
	char go;
	if (read(sock, &go, 1) != 1 || go != 'w')
		_exit(13);
	/* The importer wrote through its own mapping: the pod sees it in its memory. */
	char reply = std::memcmp(p + write_back_off, write_back_msg, sizeof(write_back_msg)) == 0
			     ? 'y'
			     : 'n';
	if (write(sock, &reply, 1) != 1)
		_exit(14);
	_exit(reply == 'y' ? 0 : 15);
}

/* Sends a hand-made export message: header bytes plus the given fds. */
void send_raw(int sock, const void *data, size_t len, std::initializer_list<int> fds)
{
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)] = {};
	iovec iov = {const_cast<void *>(data), len};
	msghdr msg = {};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fds.size() > 0) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
		cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
		std::memcpy(CMSG_DATA(c), fds.begin(), sizeof(int) * fds.size());
	}
	ASSERT_EQ(sendmsg(sock, &msg, MSG_NOSIGNAL), static_cast<ssize_t>(len))
		<< std::strerror(errno);
}

region_export_header good_header(const region &r)
{
	region_export_header h = {};
	h.magic = region_export_magic;
	h.version = region_export_version;
	h.tag = 1;
	h.length = r.size();
	h.base_va = r.remote_base();
	return h;
}

/*
 * Sends (header, fds) on a fresh socketpair of `type`, imports, and checks that the import
 * is refused with an error containing `want` and that no fd is left behind.
 */
void expect_refused(const char *what, int type, const region_export_header &h,
		    std::initializer_list<int> fds, const char *want, size_t send_len = 0)
{
	SCOPED_TRACE(what);
	int before = count_open_fds();
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
	send_raw(sv[0], &h, send_len ? send_len : sizeof(h), fds);
	if (send_len)
		shutdown(sv[0], SHUT_WR); /* a short message: the peer then closes */
	auto r = region::import_from(sv[1]);
	close(sv[0]);
	close(sv[1]);
	ASSERT_FALSE(r) << "import accepted";
	EXPECT_NE(r.error().message().find(want), std::string::npos) << r.error().message();
	EXPECT_EQ(count_open_fds(), before) << "fd leaked";
}

rte_device *find_vdev(const char *name)
{
	rte_dev_iterator it;
	rte_device *dev;
	RTE_DEV_FOREACH(dev, "bus=vdev", &it)
	{
		if (std::strcmp(rte_dev_name(dev), name) == 0)
			return dev;
	}
	return nullptr;
}

} // namespace

TEST(Region, ChildExportsParentImportsTranslatesAndWritesBack)
{
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	child_guard child;
	child.pid = fork();
	ASSERT_GE(child.pid, 0);
	if (child.pid == 0) {
		close(sv[1]);
		exporter_child(sv[0]);
	}
	close(sv[0]);
	int sock = sv[1];

	/*
	 * After fork both address spaces look alike, so the import could land at the child's
	 * own address and translation would be the identity. Reserve that range here first.
	 */
	uint64_t where[2];
	ASSERT_EQ(read(sock, where, sizeof(where)), static_cast<ssize_t>(sizeof(where)));
	void *hole = mmap(reinterpret_cast<void *>(where[0]), where[1], PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (hole == MAP_FAILED) {
		ASSERT_EQ(errno, EEXIST) << "reserving the child's range: " << std::strerror(errno);
	}

	auto imported = region::import_from(sock);
	ASSERT_TRUE(imported) << imported.error().message();
	EXPECT_EQ(imported->tag(), 42u);
	EXPECT_GE(imported->size(), region_len);
	const uint64_t child_base = imported->remote_base();
	const size_t len = imported->size();
	EXPECT_NE(child_base, reinterpret_cast<uintptr_t>(imported->data()))
		<< "child and parent should map at different addresses";

	mkey_table table;
	auto mkey = table.register_region(std::move(*imported));
	ASSERT_TRUE(mkey) << mkey.error().message();

	/* Read the child's pattern through its own addresses. */
	for (size_t off : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{777777}, len - 1}) {
		auto *p = static_cast<const uint8_t *>(table.translate(*mkey, child_base + off, 1));
		ASSERT_NE(p, nullptr) << off;
		EXPECT_EQ(*p, pattern(off)) << off;
	}
	auto *all = static_cast<const uint8_t *>(table.translate(*mkey, child_base, len));
	ASSERT_NE(all, nullptr);
	size_t bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += all[i] != pattern(i);
	EXPECT_EQ(bad, 0u);
	EXPECT_EQ(table.translate(*mkey, child_base + len, 1), nullptr);
	EXPECT_EQ(table.translate(*mkey, child_base - 1, 1), nullptr);

	/* Write back through the mapping; the child checks its own memory. */
	void *dst = table.translate(*mkey, child_base + write_back_off, sizeof(write_back_msg));
	ASSERT_NE(dst, nullptr);
	std::memcpy(dst, write_back_msg, sizeof(write_back_msg));
	char go = 'w', reply = 0;
	ASSERT_EQ(write(sock, &go, 1), 1);
	ASSERT_EQ(read(sock, &reply, 1), 1);
	EXPECT_EQ(reply, 'y');
	int st = 0;
	ASSERT_EQ(waitpid(child.pid, &st, 0), child.pid);
	child.pid = -1;
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;

	/* The mapping outlives the exporter. */
	EXPECT_EQ(*static_cast<const uint8_t *>(table.translate(*mkey, child_base + 5, 1)),
		  pattern(5));
	auto back = table.unregister_region(*mkey);
	ASSERT_TRUE(back);
	EXPECT_EQ(table.translate(*mkey, child_base, 1), nullptr);
	close(sock);
	if (hole != MAP_FAILED)
		munmap(hole, where[1]);
}

TEST(Region, StreamSocketHeaderInPiecesIsAccepted)
{
	auto r = region::create("dpumesh-region-test", 8192, false);
	ASSERT_TRUE(r) << r.error().message();
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	region_export_header h = good_header(*r);
	h.tag = 9;
	send_raw(sv[0], &h, 5, {r->fd()});
	send_raw(sv[0], reinterpret_cast<char *>(&h) + 5, sizeof(h) - 5, {});
	auto imported = region::import_from(sv[1]);
	ASSERT_TRUE(imported) << imported.error().message();
	EXPECT_EQ(imported->tag(), 9u);
	EXPECT_EQ(imported->remote_base(), r->remote_base());
	static_cast<char *>(r->data())[100] = 'x';
	EXPECT_EQ(static_cast<char *>(imported->data())[100], 'x') << "same memory";
	close(sv[0]);
	close(sv[1]);
}

TEST(Region, MalformedExportsAreRefusedWithoutLeakingFds)
{
	auto r = region::create("dpumesh-region-test", 2 * 4096, false);
	ASSERT_TRUE(r) << r.error().message();
	const int fd = r->fd();
	const region_export_header good = good_header(*r);

	region_export_header h = good;
	h.magic = 0x12345678;
	expect_refused("bad magic", SOCK_SEQPACKET, h, {fd}, "bad magic");
	h = good;
	h.version = 2;
	expect_refused("bad version", SOCK_SEQPACKET, h, {fd}, "version 2");
	h = good;
	h.reserved2 = 1;
	expect_refused("reserved field", SOCK_SEQPACKET, h, {fd}, "reserved");
	h = good;
	h.length = 0;
	expect_refused("length 0", SOCK_SEQPACKET, h, {fd}, "length 0");
	h = good;
	h.length = 4 * 4096;
	expect_refused("length larger than the fd", SOCK_SEQPACKET, h, {fd}, "larger than the fd");
	h = good;
	h.length = 4096 + 1;
	expect_refused("length not page multiple", SOCK_SEQPACKET, h, {fd}, "multiple of the page");
	expect_refused("two fds", SOCK_SEQPACKET, good, {fd, fd}, "2 file descriptors");
	expect_refused("two fds, stream", SOCK_STREAM, good, {fd, fd}, "2 file descriptors");
	expect_refused("no fd", SOCK_SEQPACKET, good, {}, "no file descriptor");
	expect_refused("no fd, stream", SOCK_STREAM, good, {}, "no file descriptor");
	expect_refused("nine fds", SOCK_SEQPACKET, good, {fd, fd, fd, fd, fd, fd, fd, fd, fd},
		       "truncated");
	expect_refused("short header", SOCK_SEQPACKET, good, {fd}, "peer closed", 10);
	expect_refused("short header, stream", SOCK_STREAM, good, {fd}, "peer closed", 10);

	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	expect_refused("a pipe", SOCK_SEQPACKET, good, {p[0]}, "not a memory file");
	close(p[0]);
	close(p[1]);

	/* A memfd the exporter could still shrink under the importer. */
	int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
	ASSERT_GE(unsealed, 0);
	ASSERT_EQ(ftruncate(unsealed, static_cast<off_t>(good.length)), 0);
	expect_refused("unsealed memfd", SOCK_SEQPACKET, good, {unsealed}, "F_SEAL_SHRINK");
	close(unsealed);

	/* A longer message than the header (datagram-style sockets keep boundaries). */
	{
		SCOPED_TRACE("message too long");
		int before = count_open_fds();
		int sv[2];
		ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
		char big[64] = {};
		std::memcpy(big, &good, sizeof(good));
		send_raw(sv[0], big, sizeof(big), {fd});
		auto bad = region::import_from(sv[1]);
		close(sv[0]);
		close(sv[1]);
		ASSERT_FALSE(bad);
		EXPECT_NE(bad.error().message().find("longer than"), std::string::npos)
			<< bad.error().message();
		EXPECT_EQ(count_open_fds(), before);
	}

	/* And the good message still works, and the imported region's fd is the only new one. */
	int before = count_open_fds();
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ASSERT_TRUE(r->export_to(sv[0], 1));
	{
		auto ok = region::import_from(sv[1]);
		ASSERT_TRUE(ok) << ok.error().message();
		EXPECT_EQ(fcntl(ok->fd(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC) << "MSG_CMSG_CLOEXEC";
		EXPECT_EQ(count_open_fds(), before + 3);
	}
	close(sv[0]);
	close(sv[1]);
	EXPECT_EQ(count_open_fds(), before);
}

TEST(Region, ExportDescriptorImportsWithoutASocket)
{
	/* doca_mmap_export_pci / create_from_export: an opaque descriptor plus, here, the fd */
	auto r = region::create("dpumesh-region-desc", 3 * 4096, false);
	ASSERT_TRUE(r) << r.error().message();
	static_cast<uint8_t *>(r->data())[100] = 0x5a;
	const std::vector<uint8_t> desc = r->export_desc(9);
	ASSERT_EQ(desc.size(), sizeof(region_export_header));

	auto m = region::create_from_export(desc, dup(r->fd()));
	ASSERT_TRUE(m) << m.error().message();
	EXPECT_EQ(m->remote_base(), r->remote_base());
	EXPECT_EQ(m->size(), r->size());
	EXPECT_EQ(m->tag(), 9u);
	EXPECT_EQ(static_cast<uint8_t *>(m->data())[100], 0x5a);

	/* refusals close the fd they were given */
	const int before = count_open_fds();
	std::vector<uint8_t> shorter(desc.begin(), desc.end() - 1);
	auto e1 = region::create_from_export(shorter, dup(r->fd()));
	ASSERT_FALSE(e1);
	EXPECT_NE(e1.error().message().find("descriptor of 31 bytes"), std::string::npos)
		<< e1.error().message();
	std::vector<uint8_t> bad = desc;
	bad[0] ^= 1;
	auto e2 = region::create_from_export(bad, dup(r->fd()));
	ASSERT_FALSE(e2);
	EXPECT_NE(e2.error().message().find("bad magic"), std::string::npos) << e2.error().message();
	auto e3 = region::create_from_export(desc, -1);
	ASSERT_FALSE(e3);
	EXPECT_NE(e3.error().message().find("no file descriptor"), std::string::npos);
	EXPECT_EQ(count_open_fds(), before);
}

TEST(Region, CreateRoundsToPagesAndRejectsZero)
{
	auto z = region::create("zero", 0);
	ASSERT_FALSE(z);
	EXPECT_NE(z.error().message().find("length 0"), std::string::npos);
	auto r = region::create("one", 1, false);
	ASSERT_TRUE(r) << r.error().message();
	EXPECT_EQ(r->size(), r->page_size());
	EXPECT_FALSE(r->hugepages());
	EXPECT_EQ(r->remote_base(), reinterpret_cast<uintptr_t>(r->data()));
	/* Sealed: nobody can shrink it under an importer. */
	EXPECT_NE(ftruncate(r->fd(), 0), 0);
	auto h = region::create("huge-or-not", 3 << 20, true);
	ASSERT_TRUE(h) << h.error().message();
	EXPECT_EQ(h->size() % h->page_size(), 0u);
	EXPECT_GE(h->size(), size_t{3} << 20);
}

TEST(RegionDpdk, RegisterWithExtmemAndDmaDevice)
{
	rte_device *dev = find_vdev("dma_skeleton");
	ASSERT_NE(dev, nullptr) << "dma_skeleton vdev not probed";
	auto r = region::create("dpumesh-region-dpdk", 1 << 20);
	ASSERT_TRUE(r) << r.error().message();
	EXPECT_EQ(rte_mem_virt2memseg_list(r->data()), nullptr);

	auto st = dpdk_register_region(*r, dev);
	ASSERT_TRUE(st) << st.message();
	const rte_memseg_list *msl = rte_mem_virt2memseg_list(r->data());
	ASSERT_NE(msl, nullptr) << "known to DPDK after registration";
	EXPECT_TRUE(msl->external);
	EXPECT_NE(rte_mem_virt2memseg_list(static_cast<char *>(r->data()) + r->size() - 1), nullptr);

	auto again = dpdk_register_region(*r, dev);
	ASSERT_FALSE(again);
	EXPECT_NE(again.message().find("rte_extmem_register"), std::string::npos) << again.message();

	ASSERT_TRUE(dpdk_unregister_region(*r, dev));
	EXPECT_EQ(rte_mem_virt2memseg_list(r->data()), nullptr);
	/* Not registered any more: the device unmap (EINVAL) and the extmem unregister fail. */
	auto twice = dpdk_unregister_region(*r, dev);
	ASSERT_FALSE(twice);
	EXPECT_NE(twice.message().find("rte_dev_dma_unmap"), std::string::npos) << twice.message();
	auto twice_nodev = dpdk_unregister_region(*r, nullptr);
	ASSERT_FALSE(twice_nodev);
	EXPECT_NE(twice_nodev.message().find("rte_extmem_unregister"), std::string::npos)
		<< twice_nodev.message();

	/* Without a device: extmem only. */
	ASSERT_TRUE(dpdk_register_region(*r, nullptr));
	EXPECT_NE(rte_mem_virt2memseg_list(r->data()), nullptr);
	ASSERT_TRUE(dpdk_unregister_region(*r, nullptr));
}

TEST(RegionDpdk, ImportedRegionRegisters)
{
	auto r = region::create("dpumesh-region-dpdk", 64 << 10, false);
	ASSERT_TRUE(r);
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ASSERT_TRUE(r->export_to(sv[0], 3));
	auto imported = region::import_from(sv[1]);
	close(sv[0]);
	close(sv[1]);
	ASSERT_TRUE(imported) << imported.error().message();
	mkey_table table;
	auto mkey = table.register_region(std::move(*imported));
	ASSERT_TRUE(mkey);
	const region *reg = table.find(*mkey);
	ASSERT_NE(reg, nullptr);
	ASSERT_TRUE(dpdk_register_region(*reg, find_vdev("dma_skeleton")));
	EXPECT_NE(rte_mem_virt2memseg_list(reg->data()), nullptr);
	ASSERT_TRUE(dpdk_unregister_region(*reg, find_vdev("dma_skeleton")));
	ASSERT_TRUE(table.unregister_region(*mkey));
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(
		new dpumesh::test::eal_env("region", {"dma_skeleton"}, 64));
	return RUN_ALL_TESTS();
}
