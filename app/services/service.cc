// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-service: a muBench-style sample service for pods, on the coroutine API
// (dpumesh/host/coro.h). Each request does configurable CPU work, then calls downstream
// services stage by stage (the calls of one stage in parallel, stages in series), as a
// service graph file says:
//
//   { "services": { "s0": { "cpu_us": 200, "calls": [ ["s1", "s2"] ] },
//                   "s1": { "cpu_us": 100, "calls": [ ["s3"] ] },
//                   "s2": { "cpu_us": 100, "calls": [ ["s3"] ] },
//                   "s3": { "cpu_us": 50 } } }
//
// Every service answers with its request body (so bodies are checked at every hop: a
// downstream answer must equal what was sent), and fields that let a client check the walk:
//   x-visited  the call tree, e.g. "s0(s1(s3),s2(s3))"
//   x-nodes    "service@node" of every hop, in call order, space-separated
//   x-digest   FNV-1a of the body (hex)
// A downstream failure answers 502 with a JSON body naming the service and its status.
//
// Usage: dpumesh-service --socket SOCK --graph FILE --service NAME [--node NAME]
//        [--body-slot BYTES]   (default 1114112: 1 MiB bodies and their L7 header)
//        [--deadline-ms MS]    (per downstream call, at most: less when what is left of
//                               the request's own deadline is less; default 10000)
// Prints "READY service=... pod=..." once registered; SIGTERM prints "DONE ..." and exits.
#include <signal.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dpumesh/common/fnv.h"
#include "dpumesh/common/numbers.h"
#include "dpumesh/host/coro.h"
#include "dpumesh/json/json.h"

namespace {

using namespace dpumesh::host;

struct service_def {
	uint32_t cpu_us = 0;
	std::vector<std::vector<std::string>> stages;
};

volatile sig_atomic_t g_stop = 0;

void burn(uint32_t us)
{
	if (!us)
		return;
	const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
	volatile uint64_t x = 1;
	while (std::chrono::steady_clock::now() < until)
		for (int i = 0; i < 64; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
}

/*
 * A cycle in the graph's calls ("" if none), as "pointer: message". A cycle (s0 -> s1 -> s0)
 * would call round until the request's deadline ran out (each call carries what is left of
 * it), every turn a request more in the pods' pools: no answer but a 504. Every service's calls are
 * walked, well-formed or not (the malformed parts are the loading service's to refuse), so
 * every process given the file refuses it alike.
 */
std::string find_cycle(const json_t *svcs)
{
	using dpumesh::json::pointer_append;
	struct edge {
		std::string to, at; /* the callee, and the pointer to its name */
	};
	std::map<std::string, std::vector<edge>> calls;
	const char *svc;
	const json_t *def;
	json_object_foreach(const_cast<json_t *>(svcs), svc, def) {
		std::vector<edge> &out = calls[svc];
		const json_t *stages = json_is_object(def) ? json_object_get(def, "calls") : nullptr;
		size_t i, j;
		const json_t *st, *c;
		json_array_foreach(json_is_array(stages) ? stages : nullptr, i, st)
			json_array_foreach(json_is_array(st) ? st : nullptr, j, c)
				if (json_is_string(c) && json_object_get(svcs, json_string_value(c)))
					out.push_back({json_string_value(c),
						       pointer_append(pointer_append(pointer_append(
									      pointer_append("/services", svc),
									      "calls"),
								      i),
								      j)});
	}
	/* depth first from every service, iteratively (a long chain needs no deep stack) */
	enum : uint8_t { unseen, on_path, done };
	std::map<std::string, uint8_t> state;
	for (const auto &[root, _] : calls) {
		if (state[root] != unseen)
			continue;
		std::vector<std::pair<const std::string *, size_t>> path{{&root, 0}};
		state[root] = on_path;
		while (!path.empty()) {
			auto &[at, next] = path.back();
			const std::vector<edge> &es = calls[*at];
			if (next == es.size()) {
				state[*at] = done;
				path.pop_back();
				continue;
			}
			const edge &e = es[next++];
			if (state[e.to] == on_path) {
				std::string walk;
				bool in = false;
				for (const auto &[s, n] : path) {
					in = in || *s == e.to;
					if (in)
						walk += *s + " -> ";
				}
				return e.at + ": \"" + e.to + "\" is called back within its own calls (" +
				       walk + e.to + "): the graph must have no cycle";
			}
			if (state[e.to] == unseen) {
				state[e.to] = on_path;
				path.emplace_back(&calls.find(e.to)->first, 0);
			}
		}
	}
	return "";
}

bool load_graph(const std::string &path, const std::string &name, service_def *out,
		std::string *err)
{
	using dpumesh::json::object_reader;
	using dpumesh::json::pointer_append;
	auto doc = dpumesh::json::document::load_file(path, 16u << 20);
	if (!doc) {
		*err = doc.error().message();
		return false;
	}
	dpumesh::json::reader r(*doc);
	object_reader root(r, doc->root(), "");
	const json_t *svcs = root.get("services", true);
	root.done();
	object_reader all(r, svcs, "/services");
	const json_t *me = all.valid() ? json_object_get(svcs, name.c_str()) : nullptr;
	if (all.valid() && !me)
		r.fail("/services", "service \"" + name + "\" is not defined");
	object_reader o(r, me, pointer_append("/services", name));
	o.uint("cpu_us", out->cpu_us, 0, 10000000);
	const json_t *calls = o.array("calls", false, 64);
	o.done();
	size_t i, j;
	const json_t *st, *c;
	json_array_foreach(r.failed() ? nullptr : calls, i, st) {
		std::string sp = pointer_append(o.child("calls"), i);
		if (!json_is_array(st) || json_array_size(st) == 0) {
			r.fail(sp, "a non-empty array of service names expected");
			break;
		}
		std::vector<std::string> stage;
		json_array_foreach(st, j, c) {
			if (!json_is_string(c) || !json_object_get(svcs, json_string_value(c))) {
				r.fail(pointer_append(sp, j), "not a service of the graph");
				break;
			}
			stage.push_back(json_string_value(c));
		}
		out->stages.push_back(std::move(stage));
	}
	if (r.failed()) {
		*err = r.error()->message();
		return false;
	}
	if (std::string cycle = find_cycle(svcs); !cycle.empty()) {
		*err = path + ": " + cycle;
		return false;
	}
	return true;
}

/* What one downstream call gave: its status and its part of the walk. */
struct call_result {
	std::string service;
	int status = 0;
	std::string visited, nodes;
};

struct counts {
	uint64_t served = 0, failed = 0, calls = 0, bad_bodies = 0;
};

/* One downstream call; the answer must echo the body sent. */
task<call_result> call_one(pod &p, counts &n, const std::string &service, const call_spec &spec)
{
	n.calls++;
	reply r = co_await p.call(service, spec);
	call_result c;
	c.service = service;
	c.status = r.status();
	if (r.ok() && (r.body().size() != spec.body.size() ||
		       (!spec.body.empty() &&
			std::memcmp(r.body().data(), spec.body.data(), spec.body.size()) != 0))) {
		n.bad_bodies++;
		c.status = 502;
	}
	c.visited = c.status == 200 ? std::string(r.field("x-visited"))
				    : service + "!" + std::to_string(c.status);
	c.nodes = r.field("x-nodes");
	co_return c;
}

/* A request: CPU work, the stages in series (calls of a stage in parallel), the answer. */
task<void> handle(pod &p, const service_def &def, const std::string &name,
		  const std::string &node, counts &n, request &req)
{
	burn(def.cpu_us);
	const std::string rid(req.field("x-request-id"));
	const field rid_field[1] = {{"x-request-id", rid}};
	call_spec spec;
	spec.path = req.path();
	spec.body = req.body();
	spec.fields = rid.empty() ? std::span<const field>() : std::span<const field>(rid_field);
	spec.within = &req; /* the calls end when the request's own deadline does */
	std::vector<call_result> done;
	const call_result *failed = nullptr;
	for (const auto &stage : def.stages) {
		std::vector<task<call_result>> calls;
		calls.reserve(stage.size());
		for (const std::string &svc : stage)
			calls.push_back(call_one(p, n, svc, spec));
		co_await when_all(std::span<task<call_result>>(calls));
		for (auto &t : calls)
			done.push_back(t.take());
		for (const call_result &c : done)
			if (!failed && c.status != 200)
				failed = &c;
		if (failed)
			break;
	}
	std::string visited = name, nodes = name + "@" + node;
	if (!done.empty()) {
		visited += "(";
		for (size_t i = 0; i < done.size(); i++) {
			visited += (i ? "," : "") + done[i].visited;
			if (!done[i].nodes.empty())
				nodes += " " + done[i].nodes;
		}
		visited += ")";
	}
	char digest[16];
	std::snprintf(digest, sizeof(digest), "%08x",
		      dpumesh::fnv1a(req.body().data(), req.body().size()));
	field f[4] = {{"x-visited", visited}, {"x-nodes", nodes}, {"x-digest", digest},
		      {"content-type", "application/octet-stream"}};
	if (failed) {
		const std::string body = "{\"error\":\"downstream\",\"service\":\"" +
					 failed->service + "\",\"status\":" +
					 std::to_string(failed->status) + "}\n";
		f[3].value = "application/json";
		n.failed++;
		co_await req.respond(502, body, f);
	} else {
		n.served++;
		co_await req.respond(200, req.body(), f);
	}
}

} // namespace

int main(int argc, char **argv)
{
	std::string sock, graph, name, node = "-";
	uint32_t body_slot = 1114112, deadline_ms = 10000;
	/* a whole number in [1, max], or the option is refused with what was given */
	const auto whole = [](const std::string &opt, const char *v, uint32_t max, uint32_t &out) {
		const auto n = dpumesh::parse_whole(v, 1, max, 0);
		if (!n) {
			std::fprintf(stderr, "dpumesh-service: %s \"%s\" is not a whole number in [1, %u]\n",
				     opt.c_str(), v, max);
			return false;
		}
		out = static_cast<uint32_t>(*n);
		return true;
	};
	for (int i = 1; i < argc; i += 2) {
		std::string a = argv[i];
		if (i + 1 == argc) {
			std::fprintf(stderr, "dpumesh-service: %s wants a value\n", a.c_str());
			return 2;
		}
		if (a == "--socket")
			sock = argv[i + 1];
		else if (a == "--graph")
			graph = argv[i + 1];
		else if (a == "--service")
			name = argv[i + 1];
		else if (a == "--node")
			node = argv[i + 1];
		else if (a == "--body-slot") {
			if (!whole(a, argv[i + 1], UINT32_MAX, body_slot))
				return 2;
		} else if (a == "--deadline-ms") {
			if (!whole(a, argv[i + 1], UINT32_MAX, deadline_ms))
				return 2;
		} else {
			std::fprintf(stderr, "dpumesh-service: unknown option %s\n", a.c_str());
			return 2;
		}
	}
	if (sock.empty() || graph.empty() || name.empty() || deadline_ms == 0) {
		std::fprintf(stderr, "usage: dpumesh-service --socket SOCK --graph FILE --service NAME "
				     "[--node NAME] [--body-slot BYTES] [--deadline-ms MS]\n");
		return 2;
	}
	service_def def;
	std::string err;
	if (!load_graph(graph, name, &def, &err)) {
		std::fprintf(stderr, "dpumesh-service: graph: %s\n", err.c_str());
		return 1;
	}
	event_loop loop;
	pod_options o;
	o.socket = sock;
	o.service = name;
	/* 16 body slots of body_slot bytes (memfd pages are touched only when used) */
	o.geometry = dpumesh_geometry{{64, 1024}, {16, body_slot}, {64, 1024}, {16, body_slot}, 256, 0};
	o.default_deadline = std::chrono::milliseconds(deadline_ms);
	auto p = pod::open(loop, o, &err);
	if (!p) {
		std::fprintf(stderr, "dpumesh-service: open %s as %s: %s\n", sock.c_str(), name.c_str(),
			     err.c_str());
		return 1;
	}
	counts n;
	p->serve([&](request &req) { return handle(*p, def, name, node, n, req); });
	signal(SIGTERM, [](int) { g_stop = 1; });
	signal(SIGINT, [](int) { g_stop = 1; });
	std::printf("READY service=%s pod=%u node=%s stages=%zu cpu_us=%u\n", name.c_str(),
		    p->pod_id(), node.c_str(), def.stages.size(), def.cpu_us);
	std::fflush(stdout);
	while (!g_stop && !p->node_lost())
		loop.run_once(200);
	if (p->node_lost()) /* nothing more will come: leave, as dpumesh-pod does */
		std::printf("NODE LOST\n");
	std::printf("DONE service=%s served=%llu failed=%llu calls=%llu bad_bodies=%llu\n",
		    name.c_str(), static_cast<unsigned long long>(n.served),
		    static_cast<unsigned long long>(n.failed),
		    static_cast<unsigned long long>(n.calls),
		    static_cast<unsigned long long>(n.bad_bodies));
	std::fflush(stdout);
	const bool lost = p->node_lost();
	p.reset();
	return lost ? 3 : 0;
}
