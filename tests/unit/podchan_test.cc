// SPDX-License-Identifier: BSD-3-Clause
// Control messages: well-formed ones pass, every malformed field is refused, fds are counted
// and closed.
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include "fds.h"
#include "dpumesh/podchan/channel.h"

namespace {

using namespace dpumesh;

using dpumesh::test::count_fds;

dpumesh_ctrl_register good_register()
{
	dpumesh_ctrl_register r = {};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTER, sizeof(r));
	std::strcpy(r.service, "echo");
	r.nb_workers = 2;
	r.geometry = {{16, 1024}, {16, 4096}, {16, 1024}, {16, 4096}, 16, 0};
	return r;
}

class ctrl_test : public ::testing::Test {
protected:
	void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0); }
	void TearDown() override
	{
		close(sv[0]);
		close(sv[1]);
	}
	/* Sends bytes (+ fds) and receives them back as a message. */
	status roundtrip(const void *p, size_t len, const int *fds = nullptr, size_t nb = 0,
			 size_t want_fds = 0)
	{
		EXPECT_TRUE(podchan::send(sv[0], p, len, fds, nb).is_ok());
		podchan::message m;
		EXPECT_EQ(podchan::receive(sv[1], m, true), podchan::receive_rc::message);
		return podchan::check(m, want_fds);
	}
	int sv[2];
};

TEST_F(ctrl_test, good_messages_pass)
{
	auto r = good_register();
	EXPECT_TRUE(roundtrip(&r, sizeof(r)).is_ok());
	dpumesh_ctrl_unregister u = {};
	u.hdr = podchan::make_hdr(DPUMESH_CTRL_UNREGISTER, sizeof(u));
	EXPECT_TRUE(roundtrip(&u, sizeof(u)).is_ok());
	dpumesh_ctrl_registered ok = {};
	ok.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTERED, sizeof(ok));
	ok.pod_id = 3;
	ok.generation = 9;
	ok.nb_workers = 2;
	ok.sq_depth = 16;
	int efd = eventfd(0, EFD_CLOEXEC);
	EXPECT_TRUE(roundtrip(&ok, sizeof(ok), &efd, 1, 1).is_ok());
	close(efd);
}

TEST_F(ctrl_test, malformed_register_refused)
{
	auto mutate = [&](auto fn) {
		auto r = good_register();
		fn(r);
		return roundtrip(&r, sizeof(r));
	};
	EXPECT_FALSE(mutate([](auto &r) { r.hdr.magic ^= 1; }));
	EXPECT_FALSE(mutate([](auto &r) { r.hdr.version = DPUMESH_CTRL_VERSION + 1; }));
	EXPECT_FALSE(mutate([](auto &r) { r.hdr.type = 77; }));
	EXPECT_FALSE(mutate([](auto &r) { r.hdr.length = 127; }));
	EXPECT_FALSE(mutate([](auto &r) { r.hdr.reserved = 1; }));
	EXPECT_FALSE(mutate([](auto &r) { r.hdr.type = DPUMESH_CTRL_UNREGISTER; })); /* size */
	EXPECT_FALSE(mutate([](auto &r) { std::memset(r.service, 'a', sizeof(r.service)); }));
	EXPECT_FALSE(mutate([](auto &r) { r.service[0] = 0; }));
	EXPECT_FALSE(mutate([](auto &r) { r.service[0] = 'E'; }));
	EXPECT_FALSE(mutate([](auto &r) { r.service[10] = 'x'; })); /* junk after the NUL */
	EXPECT_FALSE(mutate([](auto &r) { r.service[1] = '/'; }));
	EXPECT_FALSE(mutate([](auto &r) { r.nb_workers = 0; }));
	EXPECT_FALSE(mutate([](auto &r) { r.nb_workers = 17; }));
	EXPECT_FALSE(mutate([](auto &r) { r.reserved = 1; }));
	EXPECT_FALSE(mutate([](auto &r) { r.geometry.sq_depth = 24; }));
	EXPECT_FALSE(mutate([](auto &r) { r.geometry.rx_body.slot_size = 8; }));
	EXPECT_FALSE(mutate([](auto &r) { r.geometry.reserved = 1; }));
	EXPECT_FALSE(mutate([](auto &r) { r.geometry.tx_header.slots = 0; }));
	/* Short and long datagrams. */
	auto r = good_register();
	EXPECT_FALSE(roundtrip(&r, 100));
	EXPECT_FALSE(roundtrip(&r, 8));
	uint8_t big[300] = {};
	std::memcpy(big, &r, sizeof(r));
	EXPECT_FALSE(roundtrip(big, sizeof(big))); /* truncated into 256 bytes */
}

TEST_F(ctrl_test, unexpected_fds_refused_and_closed)
{
	int before = count_fds();
	int efd[3] = {eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC)};
	auto r = good_register();
	EXPECT_FALSE(roundtrip(&r, sizeof(r), efd, 1));
	EXPECT_FALSE(roundtrip(&r, sizeof(r), efd, 3));
	for (int fd : efd)
		close(fd);
	EXPECT_EQ(count_fds(), before); /* received copies were closed */
	/* REGISTERED ok without its fd, or a refusal with one. */
	dpumesh_ctrl_registered ok = {};
	ok.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTERED, sizeof(ok));
	ok.generation = 1;
	ok.nb_workers = 1;
	ok.sq_depth = 16;
	EXPECT_FALSE(roundtrip(&ok, sizeof(ok), nullptr, 0, 1));
	ok.generation = 0;
	int e = eventfd(0, EFD_CLOEXEC);
	EXPECT_FALSE(roundtrip(&ok, sizeof(ok), &e, 1, 1)); /* generation 0 */
	close(e);
	EXPECT_EQ(count_fds(), before);
}

TEST_F(ctrl_test, registered_fields_checked)
{
	dpumesh_ctrl_registered r = {};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTERED, sizeof(r));
	r.result = DPUMESH_CTRL_ERR_SERVICE;
	std::strcpy(r.error, "unknown service");
	EXPECT_TRUE(roundtrip(&r, sizeof(r)).is_ok());
	r.result = 99;
	EXPECT_FALSE(roundtrip(&r, sizeof(r)));
	r.result = DPUMESH_CTRL_ERR_SERVICE;
	std::memset(r.error, 'x', sizeof(r.error));
	EXPECT_FALSE(roundtrip(&r, sizeof(r)));
	dpumesh_ctrl_unregister u = {};
	u.hdr = podchan::make_hdr(DPUMESH_CTRL_UNREGISTER, sizeof(u));
	u.result = 1;
	EXPECT_FALSE(roundtrip(&u, sizeof(u)));
}

TEST(ctrl, service_names)
{
	EXPECT_TRUE(podchan::valid_service_name("echo-v2.x_y"));
	EXPECT_FALSE(podchan::valid_service_name(""));
	EXPECT_FALSE(podchan::valid_service_name(std::string(64, 'a')));
	EXPECT_TRUE(podchan::valid_service_name(std::string(63, 'a')));
	EXPECT_FALSE(podchan::valid_service_name("Echo"));
}

} // namespace
