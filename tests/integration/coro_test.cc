// SPDX-License-Identifier: BSD-3-Clause
// The coroutine API (dpumesh/host/coro.h) against a real registrar and security core (the
// CPU-copy mover of tests/support/cpu_mesh.h on its own thread): round trips, ordering of
// completions, when_all/when_any, deadlines and cancellation, back-pressure with tiny pools,
// errors as values, pods that exit with calls in flight, coroutines destroyed while
// suspended, frames in steady state; and the C API's lock-free TX: two worker threads on
// their own TX SQs, no loss, duplication or reordering.
#include <sys/epoll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cpu_mesh.h"
#include "dpumesh/host/coro.h"

namespace {

using namespace dpumesh::host;
using namespace std::chrono_literals;
using dpumesh::test::cpu_mesh;

dpumesh_geometry small_geometry(uint32_t tx_slots = 64, uint32_t depth = 256, uint32_t rx_slots = 64)
{
	return dpumesh_geometry{{tx_slots, 1024}, {tx_slots, 8192}, {rx_slots, 1024}, {rx_slots, 8192}, depth, 0};
}

class coro : public ::testing::Test {
protected:
	void SetUp() override
	{
		sock = "/tmp/dpumesh-coro-" + std::to_string(::getpid()) + ".sock";
		::unlink(sock.c_str());
		mesh = std::make_unique<cpu_mesh>(
			sock, std::vector<dpumesh::config::service_config>{
				      {"echo", 4}, {"client", 4}, {"slow", 4}, {"nobody", 4}});
		mover = std::thread([this] {
			while (!stop.load(std::memory_order_relaxed))
				if (mesh->step() == 0)
					std::this_thread::sleep_for(50us);
		});
	}
	void TearDown() override
	{
		stop = true;
		mover.join();
		::unlink(sock.c_str());
	}

	std::unique_ptr<pod> open(const std::string &service, dpumesh_geometry g = small_geometry(),
				  uint32_t max_calls = 1024)
	{
		pod_options o;
		o.socket = sock;
		o.service = service;
		o.geometry = g;
		o.max_calls = max_calls;
		std::string err;
		auto p = pod::open(loop, o, &err);
		EXPECT_TRUE(p) << err;
		return p;
	}

	/* Runs the loop until pred() or the limit. */
	bool drive(const std::function<bool()> &pred, std::chrono::milliseconds limit = 10s)
	{
		auto end = clock::now() + limit;
		while (!pred()) {
			if (clock::now() > end)
				return false;
			loop.run_once(2);
		}
		return true;
	}

	/* An echo server: body back, x-pod, and the request's x-tag. */
	static void serve_echo(pod &p)
	{
		p.serve([](request &req) -> task<void> {
			field f[1] = {{"x-tag", req.field("x-tag")}};
			co_await req.respond(200, req.body(), f);
		});
	}

	std::string sock;
	std::unique_ptr<cpu_mesh> mesh;
	std::thread mover;
	std::atomic<bool> stop{false};
	event_loop loop;
};

task<reply> call_echo(pod &p, std::string body, std::string service = "echo",
		      std::chrono::milliseconds deadline = 0ms)
{
	call_spec s;
	s.path = "/echo";
	s.body = as_bytes(body);
	s.deadline = deadline;
	co_return co_await p.call(service, s);
}

/* One call; its reply goes to *out and *done counts it (for spawned calls). */
task<void> call_into(pod &p, std::string body, std::string service, reply *out, int *done)
{
	*out = co_await call_echo(p, std::move(body), std::move(service));
	(*done)++;
}

TEST_F(coro, round_trip_is_straight_line_code)
{
	auto server = open("echo");
	auto client = open("client");
	serve_echo(*server);
	int good = 0;
	auto t = [&]() -> task<void> {
		for (int i = 0; i < 50; i++) {
			std::string body = "hello " + std::to_string(i);
			std::string tag = "t" + std::to_string(i);
			field f[1] = {{"x-tag", tag}};
			call_spec s;
			s.path = "/echo";
			s.body = as_bytes(body);
			s.fields = f;
			reply r = co_await client->call("echo", s);
			EXPECT_EQ(r.status(), 200);
			EXPECT_EQ(r.body_view(), body);
			EXPECT_EQ(r.field("x-tag"), tag);
			good += r.ok() && r.body_view() == body;
		}
	};
	loop.run(t());
	EXPECT_EQ(good, 50);
	EXPECT_EQ(server->counters().requests, 50u);
	EXPECT_EQ(client->counters().replies, 50u);
}

TEST_F(coro, embeds_in_an_application_epoll_loop)
{
	auto server = open("echo");
	auto client = open("client");
	serve_echo(*server);
	int good = 0;
	auto t = [&]() -> task<void> {
		for (int i = 0; i < 20; i++) {
			reply r = co_await call_echo(*client, "embedded");
			good += r.status() == 200 && r.body_view() == "embedded";
		}
	};
	task<void> job = t();
	loop.spawn(std::move(job), &good);
	/* the application's own loop: the event loop is one fd among its others */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_event ev = {};
	ev.events = EPOLLIN;
	ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, loop.fd(), &ev), 0);
	auto end = clock::now() + 10s;
	loop.dispatch(); /* starts the spawned coroutine */
	while (good < 20 && clock::now() < end) {
		if (epoll_wait(ep, &ev, 1, 100) > 0)
			loop.dispatch();
	}
	::close(ep);
	EXPECT_EQ(good, 20);
}

/* A server that answers after the number of milliseconds its body names. */
void serve_delayed(pod &p)
{
	p.serve([&p](request &req) -> task<void> {
		int ms = std::atoi(std::string(req.body_view()).c_str());
		co_await p.loop().sleep(std::chrono::milliseconds(ms));
		co_await req.respond(200, req.body());
	});
}

TEST_F(coro, completions_resume_in_arrival_order_and_when_all_waits_for_all)
{
	auto server = open("slow");
	auto client = open("client");
	serve_delayed(*server);
	std::vector<int> order;
	auto one = [&](int idx, int ms) -> task<int> {
		reply r = co_await call_echo(*client, std::to_string(ms), "slow");
		order.push_back(idx);
		co_return r.status();
	};
	auto t = [&]() -> task<void> {
		task<int> a = one(0, 300), b = one(1, 20), c = one(2, 150);
		co_await when_all(a, b, c);
		EXPECT_EQ(a.take(), 200);
		EXPECT_EQ(b.take(), 200);
		EXPECT_EQ(c.take(), 200);
	};
	loop.run(t());
	EXPECT_EQ(order, (std::vector<int>{1, 2, 0}));
}

TEST_F(coro, when_any_takes_the_first_and_cancels_the_others)
{
	auto server = open("slow");
	auto client = open("client");
	serve_delayed(*server);
	size_t winner = 99;
	auto t = [&]() -> task<void> {
		std::vector<task<reply>> ts;
		ts.push_back(call_echo(*client, "400", "slow"));
		ts.push_back(call_echo(*client, "30", "slow"));
		ts.push_back(call_echo(*client, "300", "slow"));
		winner = co_await when_any(std::span<task<reply>>(ts));
		EXPECT_TRUE(ts[winner].done());
		EXPECT_EQ(ts[winner].take().body_view(), "30");
		EXPECT_FALSE(ts[0].valid());
		EXPECT_FALSE(ts[2].valid());
	};
	loop.run(t());
	EXPECT_EQ(winner, 1u);
	EXPECT_EQ(client->counters().cancelled, 2u);
	/* the cancelled calls' answers still come (the server answers each request once) and
	 * are dropped as late */
	EXPECT_TRUE(drive([&] { return client->counters().late == 2; }));
	EXPECT_EQ(server->counters().requests, 3u);
}

TEST_F(coro, deadline_ends_a_call_with_504_and_the_late_answer_is_dropped)
{
	auto server = open("slow");
	auto client = open("client");
	serve_delayed(*server);
	reply r;
	auto t0 = clock::now();
	auto t = [&]() -> task<void> { r = co_await call_echo(*client, "300", "slow", 40ms); };
	loop.run(t());
	auto took = clock::now() - t0;
	EXPECT_EQ(r.status(), 504);
	EXPECT_EQ(r.reason(), "deadline");
	EXPECT_EQ(r.hop(), "pod");
	EXPECT_GE(took, 40ms);
	EXPECT_LT(took, 280ms);
	EXPECT_EQ(client->counters().deadlines, 1u);
	EXPECT_TRUE(drive([&] { return client->counters().late == 1; }));
	/* the slot is free again: the next call works */
	auto t2 = [&]() -> task<void> { r = co_await call_echo(*client, "1", "slow"); };
	loop.run(t2());
	EXPECT_EQ(r.status(), 200);
}

/* Deadline propagation: a call made for a request (call_spec::within) carries what is left of
 * the request's deadline, not the pod's default (5 s here). The client gives the middle pod
 * 150 ms; the middle's call to a server that takes 2 s ends with its 504 at about then. */
TEST_F(coro, a_call_made_for_a_request_gets_what_is_left_of_its_deadline)
{
	auto server = open("slow");
	auto middle = open("echo");
	auto client = open("client");
	serve_delayed(*server);
	std::optional<std::chrono::milliseconds> left, left_after;
	int inner_status = 0;
	std::string inner_reason;
	clock::duration inner_took{};
	bool handled = false;
	middle->serve([&](request &req) -> task<void> {
		left = req.time_left();
		call_spec s;
		s.path = "/x";
		s.body = as_bytes(std::string_view("2000"));
		s.within = &req;
		const auto t0 = clock::now();
		reply r = co_await middle->call("slow", s);
		inner_took = clock::now() - t0;
		inner_status = r.status();
		inner_reason = std::string(r.reason());
		co_await req.respond(r.status());
		left_after = req.time_left();
		handled = true;
	});
	reply outer;
	auto t = [&]() -> task<void> { outer = co_await call_echo(*client, "x", "echo", 150ms); };
	loop.run(t());
	ASSERT_TRUE(drive([&] { return handled; }, 3s)) << "the middle's call did not end by 3 s";
	ASSERT_TRUE(left.has_value());
	EXPECT_GT(*left, 100ms);
	EXPECT_LE(*left, 150ms);
	EXPECT_EQ(inner_status, 504);
	EXPECT_EQ(inner_reason, "deadline");
	EXPECT_GE(inner_took, 90ms);
	EXPECT_LT(inner_took, 1000ms);
	EXPECT_FALSE(left_after.has_value()) << "answered: nothing is left to spend";
	EXPECT_EQ(outer.status(), 504);
	/* a call made for nothing keeps the pod's own deadline: the same 2 s server answers */
	reply plain;
	auto t2 = [&]() -> task<void> { plain = co_await call_echo(*client, "300", "slow"); };
	loop.run(t2());
	EXPECT_EQ(plain.status(), 200);
}

/* A node that is not there: open() says why and returns nothing, and the loop stays usable
 * (the half-made pod's destructor read its fds from a null handle: a crash). */
TEST_F(coro, open_without_a_node_is_an_error_not_a_crash)
{
	pod_options o;
	o.socket = sock + ".nobody-listens";
	o.service = "client";
	o.geometry = small_geometry();
	std::string err;
	auto p = pod::open(loop, o, &err);
	EXPECT_FALSE(p);
	EXPECT_NE(err.find("connect"), std::string::npos) << err;
	auto client = open("client");
	auto server = open("echo");
	serve_echo(*server);
	reply r;
	loop.run([&]() -> task<void> { r = co_await call_echo(*client, "still here"); }());
	EXPECT_EQ(r.status(), 200);
}

TEST_F(coro, errors_are_values)
{
	auto client = open("client");
	auto server = open("echo");
	/* a handler that never answers: the library answers 500 no_response */
	server->serve([](request &) -> task<void> { co_return; });
	reply none, unknown, big, unanswered;
	auto t = [&]() -> task<void> {
		none = co_await call_echo(*client, "x", "nobody"); /* a service with no pod */
		unknown = co_await call_echo(*client, "x", "not-a-service");
		std::string huge(9000, 'b'); /* over the 8 KiB body slot */
		big = co_await call_echo(*client, huge);
		unanswered = co_await call_echo(*client, "y");
	};
	loop.run(t());
	EXPECT_EQ(none.status(), 503);
	EXPECT_EQ(none.reason(), "no_live_pod");
	EXPECT_EQ(none.hop(), "mesh");
	EXPECT_EQ(none.mesh_status(), static_cast<uint32_t>(DPUMESH_STATUS_NO_POD));
	EXPECT_FALSE(unknown.ok());
	EXPECT_EQ(unknown.hop(), "mesh");
	EXPECT_EQ(big.status(), 413);
	EXPECT_EQ(big.reason(), "too_large");
	EXPECT_EQ(unanswered.status(), 500);
	EXPECT_EQ(server->counters().no_response, 1u);
}

/* Spans the descriptor cannot say (32-bit lengths) are refused, never cut short to their
 * low 32 bits; a deadline past the header's 2^32 - 1 ms is that, without overflowing the
 * timer's time point; a request's views after its answer are empty, not reads of a
 * released message. */
TEST_F(coro, oversized_spans_refused_long_deadlines_held_answered_requests_empty)
{
	auto client = open("client");
	auto server = open("echo");
	const std::vector<uint8_t> small(16, 'z');
	const bytes past_32_bits(small.data(), (size_t{1} << 32) + 10); /* never read */
	int huge_answer = 0;
	size_t views_after = 1;
	server->serve([&](request &req) -> task<void> {
		if (req.path() == "/huge-answer")
			huge_answer = co_await req.respond(200, past_32_bits);
		co_await req.respond(200, req.body());
		/* answered: the message's slots went back, its views are empty (they read the
		 * released message before) */
		views_after = req.path().size() + req.body().size() + req.service().size() +
			      req.method().size() + req.field("x-tag").size() + req.req_id();
	});
	reply huge_call, after, long_deadline;
	auto t = [&]() -> task<void> {
		call_spec s;
		s.path = "/echo";
		s.body = past_32_bits;
		huge_call = co_await client->call("echo", s);
		call_spec a;
		a.path = "/huge-answer";
		a.body = as_bytes(std::string_view("small"));
		after = co_await client->call("echo", a);
		call_spec l;
		l.path = "/echo";
		l.body = as_bytes(std::string_view("long"));
		l.deadline = std::chrono::milliseconds::max();
		long_deadline = co_await client->call("echo", l);
	};
	loop.run(t());
	EXPECT_EQ(huge_call.status(), 413);
	EXPECT_EQ(huge_call.reason(), "too_large");
	EXPECT_EQ(huge_answer, -EMSGSIZE);
	EXPECT_EQ(after.status(), 200); /* the handler's second answer, whole */
	EXPECT_EQ(after.body_view(), "small");
	EXPECT_EQ(long_deadline.status(), 200);
	EXPECT_EQ(long_deadline.body_view(), "long");
	EXPECT_EQ(views_after, 0u);
}

TEST_F(coro, tiny_pools_suspend_senders_and_every_request_is_answered_once)
{
	/* 8 TX slots on the client, 2 on the server, 200 calls at once: senders on both sides
	 * wait for TX room, and no EAGAIN reaches user code */
	auto server = open("echo", small_geometry(2, 64, 256));
	auto client = open("client", small_geometry(8, 64, 256), 64);
	serve_echo(*server);
	std::vector<int> answers(200, 0);
	int bad = 0, done = 0;
	/* a named lambda: its captures must outlive the coroutines it starts */
	auto one = [&](int id) -> task<void> {
		std::string body = "req-" + std::to_string(id);
		reply r = co_await call_echo(*client, body);
		if (r.status() == 200 && r.body_view() == body)
			answers[static_cast<size_t>(id)]++;
		else
			bad++;
		done++;
	};
	for (int i = 0; i < 200; i++)
		loop.spawn(one(i));
	EXPECT_TRUE(drive([&] { return done == 200; }, 30s));
	EXPECT_EQ(bad, 0);
	for (int i = 0; i < 200; i++)
		EXPECT_EQ(answers[static_cast<size_t>(i)], 1) << i;
	EXPECT_GT(client->counters().tx_waits, 0u);
	EXPECT_GT(server->counters().tx_waits, 0u);
	EXPECT_EQ(server->counters().requests, 200u);
	EXPECT_EQ(server->counters().no_response, 0u);
}

TEST_F(coro, server_pod_exits_with_requests_in_flight_callers_get_an_error_value)
{
	auto client = open("client");
	auto server = open("slow");
	serve_delayed(*server);
	std::vector<reply> got(5);
	int done = 0;
	for (reply &r : got)
		loop.spawn(call_into(*client, "10000", "slow", &r, &done));
	EXPECT_TRUE(drive([&] { return server->counters().requests == 5; }));
	server.reset(); /* its five handler coroutines are destroyed while suspended */
	EXPECT_TRUE(drive([&] { return done == 5; }));
	for (const reply &r : got) {
		EXPECT_EQ(r.status(), 502);
		EXPECT_EQ(r.reason(), "dest_gone");
	}
}

TEST_F(coro, client_pod_exits_with_calls_in_flight)
{
	auto server = open("slow");
	auto client = open("client", small_geometry(), 2); /* 2 in flight, the others wait */
	serve_delayed(*server);
	std::vector<reply> got(4);
	int done = 0;
	for (reply &r : got)
		loop.spawn(call_into(*client, "5000", "slow", &r, &done));
	EXPECT_TRUE(drive([&] { return server->counters().requests == 2; }));
	client.reset();
	EXPECT_TRUE(drive([&] { return done == 4; }));
	for (const reply &r : got) {
		EXPECT_EQ(r.status(), 503);
		EXPECT_EQ(r.reason(), "pod_closed");
	}
}

/* The node goes away (its registrar closes every pod's channel) while calls wait for a
 * server that holds them: they end 503 node_lost at once, not at their 30 s deadline, and
 * a later call ends so without being sent. */
TEST_F(coro, calls_end_with_node_lost_when_the_node_goes_away)
{
	auto server = open("slow");
	auto client = open("client");
	serve_delayed(*server);
	std::vector<reply> got(3);
	int done = 0;
	for (reply &r : got)
		loop.spawn(call_into(*client, "30000", "slow", &r, &done));
	EXPECT_TRUE(drive([&] { return server->counters().requests == 3; }));
	stop = true;
	mover.join();
	mesh.reset(); /* the node: registrar and registry gone, the channels closed */
	const auto t0 = clock::now();
	EXPECT_TRUE(drive([&] { return done == 3; }, 5s));
	EXPECT_LT(clock::now() - t0, 2s);
	for (const reply &r : got) {
		EXPECT_EQ(r.status(), 503);
		EXPECT_EQ(r.reason(), "node_lost");
	}
	reply late;
	int late_done = 0;
	loop.spawn(call_into(*client, "0", "slow", &late, &late_done));
	EXPECT_TRUE(drive([&] { return late_done == 1; }, 1s));
	EXPECT_EQ(late.reason(), "node_lost");
	EXPECT_TRUE(client->node_lost());
	EXPECT_TRUE(server->node_lost());
	EXPECT_EQ(client->counters().calls, 3u) << "the late call was sent";
	server.reset();
	client.reset();
	mover = std::thread([] {}); /* TearDown joins it */
}

TEST_F(coro, coroutine_destroyed_while_suspended_gives_up_its_call)
{
	auto server = open("slow");
	auto client = open("client", small_geometry(), 1);
	serve_delayed(*server);
	task<reply> t = call_echo(*client, "100", "slow");
	bool started = false;
	auto starter = [&]() -> task<void> {
		started = true;
		co_await when_any(t); /* never finishes before the reset below */
	};
	task<void> s = starter();
	loop.spawn(std::move(s), &started);
	EXPECT_TRUE(drive([&] { return server->counters().requests == 1; }));
	EXPECT_TRUE(started);
	loop.cancel_owned(&started); /* the spawned coroutine: destroyed while suspended */
	t.reset();                   /* and the call's own frame */
	EXPECT_EQ(client->counters().cancelled, 1u);
	EXPECT_TRUE(drive([&] { return client->counters().late == 1; }));
	/* its single call slot was given back */
	reply r;
	auto again = [&]() -> task<void> { r = co_await call_echo(*client, "1", "slow"); };
	loop.run(again());
	EXPECT_EQ(r.status(), 200);
}

TEST_F(coro, steady_state_allocates_no_frames_from_the_heap)
{
	auto server = open("echo");
	auto client = open("client");
	serve_echo(*server);
	std::string body(64, 'x');
	auto burst = [&](int n) -> task<void> {
		for (int i = 0; i < n; i++) {
			reply r = co_await call_echo(*client, body);
			EXPECT_EQ(r.status(), 200);
		}
	};
	loop.run(burst(50)); /* warm the frame pool */
	const frame_stats before = frame_pool_stats();
	loop.run(burst(500));
	const frame_stats after = frame_pool_stats();
	EXPECT_EQ(after.heap_allocs, before.heap_allocs);
	/* per call: call_echo's frame and the server's request coroutine, both pooled */
	EXPECT_GE(after.pool_allocs - before.pool_allocs, 1000u);
	std::printf("frames per call: %.2f pooled, %.2f heap\n",
		    static_cast<double>(after.pool_allocs - before.pool_allocs) / 500,
		    static_cast<double>(after.heap_allocs - before.heap_allocs) / 500);
}

/* The C API with two workers: each thread sends on its own TX SQ with no lock; a third thread
 * runs progress. The echo (a coroutine pod on this thread) checks per-worker order; the
 * sender checks every answer comes exactly once. */
TEST_F(coro, two_workers_send_on_their_own_tx_sqs_without_loss_duplication_or_reordering)
{
	auto server = open("echo", small_geometry(64, 256, 256));
	constexpr uint32_t per_worker = 3000, window = 24;
	std::map<uint32_t, int64_t> last_seq; /* worker -> last seq seen by the echo */
	uint64_t reordered = 0;
	server->serve([&](request &req) -> task<void> {
		const uint32_t w = req.req_id() >> 24, seq = req.req_id() & 0xffffff;
		auto it = last_seq.find(w);
		if (it != last_seq.end() && static_cast<int64_t>(seq) <= it->second)
			reordered++;
		last_seq[w] = seq;
		co_await req.respond(200, req.body());
	});

	struct shared {
		std::vector<std::atomic<uint8_t>> seen[2];
		std::atomic<uint32_t> answered[2];
		std::atomic<uint64_t> bad{0}, dup{0};
		std::atomic<bool> stop{false};
	} sh;
	for (auto &v : sh.seen)
		v = std::vector<std::atomic<uint8_t>>(per_worker);
	sh.answered[0] = sh.answered[1] = 0;
	dpumesh_options o = {};
	o.socket_path = sock.c_str();
	o.service = "client";
	o.nb_workers = 2;
	o.geometry = small_geometry(32, 256, 128);
	o.user = &sh;
	o.callbacks.on_response = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		auto *s = static_cast<shared *>(u);
		const uint32_t w = m->req_id >> 24, seq = m->req_id & 0xffffff;
		uint32_t want = 0;
		bool good = w < 2 && seq < per_worker && m->header_ok && m->http_status == 200 &&
			    m->body_len == 4;
		if (good)
			std::memcpy(&want, m->body, 4);
		if (!good || want != m->req_id)
			s->bad++;
		else if (s->seen[w][seq].exchange(1) != 0)
			s->dup++;
		else
			s->answered[w]++;
		dpumesh_msg_release(h, m);
	};
	dpumesh::pod c = dpumesh::pod::open(o);
	ASSERT_TRUE(c) << c.error();
	std::thread progress([&] {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		epoll_event ev = {};
		ev.events = EPOLLIN;
		epoll_ctl(ep, EPOLL_CTL_ADD, c.fd(), &ev);
		while (!sh.stop.load()) {
			(void)epoll_wait(ep, &ev, 1, 5);
			(void)c.progress();
		}
		::close(ep);
	});
	std::vector<std::thread> workers;
	uint64_t again[2] = {0, 0};
	for (uint32_t w = 0; w < 2; w++)
		workers.emplace_back([&, w] {
			for (uint32_t seq = 0; seq < per_worker;) {
				if (seq - sh.answered[w].load() >= window) {
					std::this_thread::yield();
					continue;
				}
				uint32_t id = (w << 24) | seq;
				dpumesh_request r = {};
				r.service = "echo";
				r.method = "POST";
				r.path = "/";
				r.body = &id;
				r.body_len = 4;
				r.req_id = id;
				r.step_id = 1;
				int rc = dpumesh_send_request(c.get(), w, &r);
				if (rc == -EAGAIN || rc == -ENOBUFS) {
					again[w]++;
					std::this_thread::yield();
					continue;
				}
				ASSERT_EQ(rc, 0);
				seq++;
			}
		});
	EXPECT_TRUE(drive([&] { return sh.answered[0] + sh.answered[1] == 2 * per_worker; }, 120s));
	for (auto &t : workers)
		t.join();
	sh.stop = true;
	progress.join();
	EXPECT_EQ(sh.answered[0].load(), per_worker);
	EXPECT_EQ(sh.answered[1].load(), per_worker);
	EXPECT_EQ(sh.bad.load(), 0u);
	EXPECT_EQ(sh.dup.load(), 0u);
	EXPECT_EQ(reordered, 0u);
	EXPECT_EQ(server->counters().requests, 2u * per_worker);
	dpumesh_stats st;
	dpumesh_get_stats(c.get(), &st);
	EXPECT_EQ(st.sent, 2u * per_worker);
	EXPECT_EQ(st.tx_errors, 0u);
	std::printf("two workers: %u requests each, try-again %lu/%lu\n", per_worker,
		    static_cast<unsigned long>(again[0]), static_cast<unsigned long>(again[1]));
}

} // namespace
