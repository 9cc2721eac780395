// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-service: a muBench-style sample service for pods. Each request does configurable
// CPU work, then calls downstream services through libdpumesh, stage by stage (the calls of
// one stage in parallel, stages in series), as a service graph file says:
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
// Prints "READY service=... pod=..." once registered; SIGTERM prints "DONE ..." and exits.
#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dpumesh/host/dpumesh.h"
#include "dpumesh/common/fnv.h"
#include "dpumesh/json/json.h"

namespace {

struct service_def {
	uint32_t cpu_us = 0;
	std::vector<std::vector<std::string>> stages;
};

struct call {
	std::string service;
	uint32_t step;
	bool done = false;
	int status = 0;
	std::string visited, nodes;
};

struct context {
	dpumesh_msg *req = nullptr;
	size_t stage = 0;
	uint32_t outstanding = 0;
	std::vector<call> calls; /* every call made so far, in order */
	bool failed = false;
	std::string fail_service;
	int fail_status = 0;
};

struct send_item {
	uint32_t ctx, step;
	std::string service;
};

struct state {
	std::string name, node;
	service_def def;
	std::map<uint32_t, context> ctxs;
	std::deque<send_item> to_send;    /* requests waiting for TX room */
	std::deque<uint32_t> to_answer;   /* contexts whose answer waits for TX room */
	uint32_t next_ctx = 1;
	uint64_t served = 0, failed = 0, calls = 0, bad_bodies = 0;
};

volatile sig_atomic_t g_stop = 0;

uint32_t fnv(const uint8_t *p, size_t n) { return dpumesh::fnv1a(p, n); }

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
	if (r.failed())
		*err = r.error()->message();
	return !r.failed();
}

/* Answers a context if TX room allows; false: try again later. */
bool answer(dpumesh_t *h, state *s, uint32_t id)
{
	context &c = s->ctxs.at(id);
	std::string visited = s->name, nodes = s->name + "@" + s->node;
	if (!c.calls.empty()) {
		visited += "(";
		for (size_t i = 0; i < c.calls.size(); i++) {
			visited += (i ? "," : "") + c.calls[i].visited;
			if (!c.calls[i].nodes.empty())
				nodes += " " + c.calls[i].nodes;
		}
		visited += ")";
	}
	char digest[16];
	std::snprintf(digest, sizeof(digest), "%08x", fnv(c.req->body, c.req->body_len));
	dpumesh_field f[4] = {{"x-visited", visited.c_str()}, {"x-nodes", nodes.c_str()},
			      {"x-digest", digest}, {"content-type", "application/octet-stream"}};
	int rc;
	if (c.failed) {
		std::string body = "{\"error\":\"downstream\",\"service\":\"" + c.fail_service +
				   "\",\"status\":" + std::to_string(c.fail_status) + "}\n";
		f[3].value = "application/json";
		rc = dpumesh_send_response(h, 0, c.req, 502, f, 4, body.data(),
					   static_cast<uint32_t>(body.size()));
	} else {
		rc = dpumesh_send_response(h, 0, c.req, 200, f, 4, c.req->body, c.req->body_len);
	}
	if (rc == -EAGAIN || rc == -ENOBUFS)
		return false;
	(c.failed ? s->failed : s->served)++;
	dpumesh_msg_release(h, c.req);
	s->ctxs.erase(id);
	return true;
}

void finish_or_answer(dpumesh_t *h, state *s, uint32_t id)
{
	if (!s->to_answer.empty() || !answer(h, s, id))
		s->to_answer.push_back(id);
}

/* Starts the next stage (or answers); called when a context has nothing outstanding. */
void advance(dpumesh_t *h, state *s, uint32_t id)
{
	context &c = s->ctxs.at(id);
	if (c.failed || c.stage >= s->def.stages.size())
		return finish_or_answer(h, s, id);
	for (const std::string &svc : s->def.stages[c.stage]) {
		call k;
		k.service = svc;
		k.step = static_cast<uint32_t>(c.calls.size() + 1);
		c.calls.push_back(k);
		s->to_send.push_back({id, k.step, svc});
		c.outstanding++;
	}
	c.stage++;
}

void call_done(dpumesh_t *h, state *s, uint32_t id, uint32_t step, int status,
	       std::string visited, std::string nodes)
{
	auto it = s->ctxs.find(id);
	if (it == s->ctxs.end() || step == 0 || step > it->second.calls.size())
		return;
	context &c = it->second;
	call &k = c.calls[step - 1];
	if (k.done)
		return;
	k.done = true;
	k.status = status;
	k.visited = status == 200 ? std::move(visited) : k.service + "!" + std::to_string(status);
	k.nodes = std::move(nodes);
	if (status != 200 && !c.failed) {
		c.failed = true;
		c.fail_service = k.service;
		c.fail_status = status;
	}
	if (--c.outstanding == 0)
		advance(h, s, id);
}

/* Sends queued downstream calls while TX room lasts. */
void pump(dpumesh_t *h, state *s)
{
	while (!s->to_send.empty()) {
		send_item &it = s->to_send.front();
		auto c = s->ctxs.find(it.ctx);
		if (c == s->ctxs.end()) {
			s->to_send.pop_front();
			continue;
		}
		const dpumesh_msg *req = c->second.req;
		std::string path(req->path, req->path_len);
		std::string rid;
		const char *v;
		size_t len;
		if (dpumesh_msg_field(req, "x-request-id", &v, &len) == 0)
			rid.assign(v, len);
		dpumesh_field f = {"x-request-id", rid.c_str()};
		dpumesh_request r = {};
		r.service = it.service.c_str();
		r.method = "POST";
		r.path = path.c_str();
		r.fields = &f;
		r.nb_fields = rid.empty() ? 0 : 1;
		r.body = req->body;
		r.body_len = req->body_len;
		r.req_id = it.ctx;
		r.step_id = it.step;
		int rc = dpumesh_send_request(h, 0, &r);
		if (rc == -EAGAIN || rc == -ENOBUFS)
			break;
		s->calls++;
		uint32_t ctx = it.ctx, step = it.step;
		s->to_send.pop_front();
		if (rc != 0)
			call_done(h, s, ctx, step, 500, "", "");
	}
	while (!s->to_answer.empty() && answer(h, s, s->to_answer.front()))
		s->to_answer.pop_front();
}

} // namespace

int main(int argc, char **argv)
{
	std::string sock, graph, name, node = "-";
	uint32_t body_slot = 1114112;
	for (int i = 1; i + 1 < argc; i += 2) {
		std::string a = argv[i];
		if (a == "--socket")
			sock = argv[i + 1];
		else if (a == "--graph")
			graph = argv[i + 1];
		else if (a == "--service")
			name = argv[i + 1];
		else if (a == "--node")
			node = argv[i + 1];
		else if (a == "--body-slot")
			body_slot = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 0));
		else {
			std::fprintf(stderr, "dpumesh-service: unknown option %s\n", a.c_str());
			return 2;
		}
	}
	if (sock.empty() || graph.empty() || name.empty()) {
		std::fprintf(stderr, "usage: dpumesh-service --socket SOCK --graph FILE --service NAME "
				     "[--node NAME] [--body-slot BYTES]\n");
		return 2;
	}
	static state st;
	st.name = name;
	st.node = node;
	std::string err;
	if (!load_graph(graph, name, &st.def, &err)) {
		std::fprintf(stderr, "dpumesh-service: graph: %s\n", err.c_str());
		return 1;
	}
	dpumesh_callbacks cb = {};
	cb.on_request = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		auto *s = static_cast<state *>(u);
		burn(s->def.cpu_us);
		uint32_t id = s->next_ctx++;
		if (id == 0)
			id = s->next_ctx++;
		s->ctxs[id].req = m;
		advance(h, s, id);
	};
	cb.on_response = [](dpumesh_t *h, dpumesh_msg *m, void *u) {
		auto *s = static_cast<state *>(u);
		int status = (m->flags & DPUMESH_OP_ERROR) || !m->header_ok ? 503 : m->http_status;
		std::string visited, nodes;
		const char *v;
		size_t len;
		if (dpumesh_msg_field(m, "x-visited", &v, &len) == 0)
			visited.assign(v, len);
		if (dpumesh_msg_field(m, "x-nodes", &v, &len) == 0)
			nodes.assign(v, len);
		/* every service echoes its body: the answer must equal what was sent */
		auto c = s->ctxs.find(m->req_id);
		if (status == 200 && c != s->ctxs.end()) {
			const dpumesh_msg *req = c->second.req;
			if (m->body_len != req->body_len ||
			    (req->body_len && std::memcmp(m->body, req->body, req->body_len) != 0)) {
				s->bad_bodies++;
				status = 502;
			}
		}
		uint32_t ctx = m->req_id, step = m->step_id;
		dpumesh_msg_release(h, m);
		call_done(h, s, ctx, step, status, std::move(visited), std::move(nodes));
	};
	cb.on_tx_done = [](dpumesh_t *h, uint32_t req_id, uint32_t step_id, uint32_t status,
			   void *u) {
		if (status != 0 && step_id != 0)
			call_done(h, static_cast<state *>(u), req_id, step_id, 503, "", "");
	};
	dpumesh_options o = {};
	o.socket_path = sock.c_str();
	o.service = name.c_str();
	o.nb_workers = 1;
	/* 16 body slots of body_slot bytes (memfd pages are touched only when used) */
	o.geometry = dpumesh_geometry{{64, 1024}, {16, body_slot}, {64, 1024}, {16, body_slot}, 256, 0};
	o.callbacks = cb;
	o.user = &st;
	dpumesh_t *h = nullptr;
	char e[256];
	if (int rc = dpumesh_open(&o, &h, e, sizeof(e)); rc != 0) {
		std::fprintf(stderr, "dpumesh-service: open %s as %s: %s (%d)\n", sock.c_str(),
			     name.c_str(), e, rc);
		return 1;
	}
	signal(SIGTERM, [](int) { g_stop = 1; });
	signal(SIGINT, [](int) { g_stop = 1; });
	std::printf("READY service=%s pod=%u node=%s stages=%zu cpu_us=%u\n", name.c_str(),
		    dpumesh_pod_id(h), node.c_str(), st.def.stages.size(), st.def.cpu_us);
	std::fflush(stdout);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_event ev = {};
	ev.events = EPOLLIN;
	epoll_ctl(ep, EPOLL_CTL_ADD, dpumesh_fd(h), &ev);
	while (!g_stop) {
		bool waiting = !st.to_send.empty() || !st.to_answer.empty();
		(void)epoll_wait(ep, &ev, 1, waiting ? 1 : 200);
		(void)dpumesh_progress(h);
		pump(h, &st);
	}
	std::printf("DONE service=%s served=%llu failed=%llu calls=%llu bad_bodies=%llu\n",
		    name.c_str(), static_cast<unsigned long long>(st.served),
		    static_cast<unsigned long long>(st.failed),
		    static_cast<unsigned long long>(st.calls),
		    static_cast<unsigned long long>(st.bad_bodies));
	std::fflush(stdout);
	dpumesh_close(h);
	return 0;
}
