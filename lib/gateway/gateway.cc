// SPDX-License-Identifier: BSD-3-Clause
// The ingress gateway's server: evhttp requests -> mesh messages over UDP -> HTTP responses.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <unordered_map>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "dpumesh/gateway/gateway.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/meshsock/meshsock.h"

namespace dpumesh::gateway {

namespace {

uint64_t now_ms()
{
	return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
					     std::chrono::steady_clock::now().time_since_epoch())
					     .count());
}

/* Latency buckets of the request histogram, seconds. */
constexpr double latency_buckets[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
				      0.05,   0.1,   0.25,  0.5,   1.0,  5.0};
constexpr size_t nb_buckets = std::size(latency_buckets);

/* Response bodies larger than this go out with chunked transfer coding. */
constexpr size_t chunked_above = 256 * 1024;

/* File descriptors kept for what is not a client connection (the mesh socket, the
 * listeners, the admin's connections, the event loop's own) when the connection cap is set
 * below the process's limit. */
constexpr rlim_t fd_reserve = 32;

/* Distinct mesh error reasons counted by name at most; the rest as "other" (the reasons
 * come from answers a pod can make: without a bound, each new one a map entry). */
constexpr size_t max_reason_labels = 64;

/* One accept error logged per listener at most this often (the rest counted). */
constexpr uint64_t accept_log_ms = 10000;

/* The admin address's header block at most (its requests are GET or HEAD of two paths, with
 * no body): evhttp's defaults have no limit on a header block or a body. */
constexpr ev_ssize_t admin_max_header_bytes = 8192;

} // namespace

/* A listener's accepting, paused by an accept error until the next sweep. Without it, an
 * accept that fails for want of a descriptor (EMFILE: the connection stays in the backlog,
 * the socket stays readable) is tried again at once, forever: libevent's default logs a
 * warning a try (~16 MB of log a second, a whole core). */
struct accept_gate {
	server::impl *gw = nullptr;
	evconnlistener *l = nullptr;
	const char *what = "";
	std::string addr;
	bool paused = false;	  /* by an accept error; the next sweep accepts again */
	bool enabled = true;	  /* as set last (a listener is made enabled) */
	uint64_t logged_ms = 0;   /* the last error logged */
	uint64_t unlogged = 0;    /* errors since, not logged */
};

namespace {

/* libevent calls a listener's error callback with the user data evhttp gave the listener
 * (the evhttp), not ours: each gate is found by its listener here. */
std::mutex gates_mu;
std::unordered_map<const evconnlistener *, accept_gate *> gates;

accept_gate *gate_of(const evconnlistener *l)
{
	std::lock_guard<std::mutex> lk(gates_mu);
	auto it = gates.find(l);
	return it == gates.end() ? nullptr : it->second;
}

} // namespace

/* A connection accepted by evhttp, followed so that a slow sender can be closed: evhttp's
 * own time-out is per read (a byte every few seconds keeps it alive), so the gateway adds a
 * deadline from accept (or its last reply) to a whole request. It holds a reference on the
 * bufferevent, so the pointer stays valid after evhttp frees the connection; it notices the
 * free (callbacks cleared) on its next sweep and drops the reference. */
struct conn_guard {
	bufferevent *bev = nullptr;
	uint64_t since_ms = 0; /* accept, or the last reply */
	server::impl *gw = nullptr;
	uint64_t id = 0;
	uint32_t busy = 0; /* requests read and not answered yet */
	bool closing = false;
	evbuffer_cb_entry *input_cb = nullptr, *output_cb = nullptr;
	uint64_t writing = 0; /* answer bytes not written yet (in impl::answers) */
	/* the memory bound (impl::scan): the request being read */
	uint64_t reading = 0;	 /* bytes read of it (in impl::buffered) */
	uint64_t reserve = 0;	 /* admitted: bytes committed for it (in impl::committed) */
	uint64_t head_bytes = 0; /* of them, up to its header block's end (once it has ended) */
	head_scanner head;	 /* its header block, as read so far */
	bool admitted = false;	 /* its body may be read */
	bool waiting = false;	 /* for admission: reading paused, in impl::admission */
};

/* A bufferevent's callbacks as evhttp set them: its read callback is none while evhttp
 * writes an answer (it reads on only to see the client close), its event callback none once
 * evhttp has freed the connection. */
struct bev_callbacks {
	bufferevent_data_cb rd = nullptr, wr = nullptr;
	bufferevent_event_cb ev = nullptr;
	void *arg = nullptr;
};

static bev_callbacks callbacks_of(bufferevent *bev)
{
	bev_callbacks c;
	bufferevent_getcb(bev, &c.rd, &c.wr, &c.ev, &c.arg);
	return c;
}

/* A request forwarded to a node, waiting for the answer. */
struct pending {
	server::impl *gw;
	uint64_t corr;
	evhttp_request *req;
	uint64_t guard;
	uint32_t node;
	uint64_t start_ms;
	std::chrono::steady_clock::time_point start;
	event *timer;
	uint64_t held; /* body bytes, in impl::buffered until the answer */
};

struct server::impl {
	config cfg;
	event_base *base = nullptr;
	evhttp *http = nullptr, *admin = nullptr;
	int fd = -1;
	event *rx_ev = nullptr, *sweep_ev = nullptr;
	meshsock::reassembler reasm;
	meshsock::receiver rx{32};
	std::unordered_map<uint64_t, std::unique_ptr<pending>> pend;
	std::unordered_map<uint64_t, conn_guard> guards;
	std::unordered_map<bufferevent *, uint64_t> guard_of;
	uint64_t next_guard = 1, next_corr = 1;
	uint32_t next_msg_id = 1;
	std::vector<uint32_t> rr; /* per route: round-robin position */
	std::vector<uint8_t> l7buf = std::vector<uint8_t>(wire::l7_max_size);
	uint64_t salt;

	/* accepting: the client listener accepts while neither at the cap nor paused by an
	 * accept error; the admin listener while not paused */
	accept_gate listen_gate, admin_gate;
	uint32_t max_conns = 0; /* cfg.max_connections, or lower: the fd limit */
	bool at_cap = false;

	/* the memory bound (see scan()): bytes held (requests read on connections, bodies
	 * waiting for the mesh, answers not written yet), the committed part (admitted
	 * requests' reservations, bodies waiting, answers), the answers' part, and the requests
	 * waiting for admission, oldest first */
	uint64_t buffered = 0, buffered_peak = 0, committed = 0, answers = 0, read_pauses = 0;
	std::deque<uint64_t> admission;

	/* counters */
	std::map<int, uint64_t> responses; /* HTTP status -> count */
	std::map<std::string, uint64_t> mesh_errors, refused;
	std::map<std::string, uint64_t> accept_paused; /* by reason */
	uint64_t requests = 0, bytes_in = 0, bytes_out = 0, unmatched = 0, timeouts = 0,
		 slow_closed = 0, connections = 0, send_errors = 0;
	std::array<uint64_t, nb_buckets + 1> latency{};
	double latency_sum = 0;

	explicit impl(const config &c) : cfg(c), reasm(limits(c))
	{
		std::random_device rd;
		salt = (uint64_t(rd()) << 32) ^ rd();
		rr.assign(cfg.routes.size(), 0);
	}
	~impl();

	static meshsock::reasm_limits limits(const config &c)
	{
		meshsock::reasm_limits l;
		l.max_message = 64u * 1024 + c.max_body_bytes + (16u << 20);
		l.timeout_ms = c.request_ms;
		return l;
	}

	void reply(evhttp_request *req, uint64_t guard, int status, evbuffer *body);
	void reply_error(evhttp_request *req, uint64_t guard, int status, const char *reason,
			 const char *hop = "ingress");
	void on_request(evhttp_request *req);
	void on_datagrams();
	void on_message(meshsock::message &m);
	void on_timeout(pending *p);
	void close_after(evhttp_request *req);
	void sweep();
	uint64_t guard_for(evhttp_request *req);
	void count_mesh_error(std::string_view reason);
	void on_accept_error(accept_gate &g, int err);
	void on_read(conn_guard &g, evbuffer *in, size_t n);
	void on_write(conn_guard &g, size_t added, size_t deleted);
	void forget(conn_guard &g);
	/* bytes a request not admitted may have read: a header block as evhttp counts it at
	 * most (line ends left out: twice), and a read */
	uint64_t head_limit() const { return 2ull * cfg.max_header_bytes + 65536; }
	void scan(conn_guard &g, evbuffer *in, size_t from);
	bool try_admit(conn_guard &g);
	void admit_waiting();
	void drop_reading(conn_guard &g);
	void hold(uint64_t n)
	{
		buffered += n;
		buffered_peak = std::max(buffered_peak, buffered);
	}
	/* bytes held and committed at once (a body waiting for the mesh, an answer), and let go */
	void hold_committed(uint64_t n)
	{
		hold(n);
		committed += n;
	}
	void let_go(uint64_t n)
	{
		buffered -= std::min(buffered, n);
		committed -= std::min(committed, n);
	}
	void request_whole(conn_guard &g);
	void finish(std::unordered_map<uint64_t, std::unique_ptr<pending>>::iterator it,
		    uint64_t held);
	void release(uint64_t held);
	void set_accepting();
	void add_gate(accept_gate &g, evhttp_bound_socket *bs, const char *what,
		      const address &a);
};

server::impl::~impl()
{
	for (auto &[id, g] : guards)
		forget(g);
	for (auto &[corr, p] : pend) {
		event_free(p->timer);
		evhttp_send_error(p->req, 503, "Service Unavailable");
	}
	pend.clear();
	{
		std::lock_guard<std::mutex> lk(gates_mu);
		for (accept_gate *g : {&listen_gate, &admin_gate})
			if (g->l)
				gates.erase(g->l);
	}
	if (http)
		evhttp_free(http);
	if (admin)
		evhttp_free(admin);
	for (auto &[id, g] : guards)
		bufferevent_decref(g.bev);
	if (rx_ev)
		event_free(rx_ev);
	if (sweep_ev)
		event_free(sweep_ev);
	if (fd >= 0)
		close(fd);
}

uint64_t server::impl::guard_for(evhttp_request *req)
{
	evhttp_connection *c = evhttp_request_get_connection(req);
	if (!c)
		return 0;
	auto it = guard_of.find(evhttp_connection_get_bufferevent(c));
	return it == guard_of.end() ? 0 : it->second;
}

void server::impl::reply(evhttp_request *req, uint64_t guard, int status, evbuffer *body)
{
	responses[status]++;
	bytes_out += body ? evbuffer_get_length(body) : 0;
	auto g = guards.find(guard);
	if (g != guards.end() && g->second.busy > 0 && --g->second.busy == 0)
		g->second.since_ms = now_ms();
	evhttp_send_reply(req, status, reason_phrase(status), body);
}

void server::impl::reply_error(evhttp_request *req, uint64_t guard, int status,
				const char *reason, const char *hop)
{
	std::string b = error_body(reason, hop, status);
	evbuffer *buf = evbuffer_new();
	evbuffer_add(buf, b.data(), b.size());
	evkeyvalq *out = evhttp_request_get_output_headers(req);
	evhttp_add_header(out, "Content-Type", "application/json");
	reply(req, guard, status, buf);
	evbuffer_free(buf);
}

/* Why req's framing cannot be trusted to be what a proxy in front read (RFC 9112 6.3), or
 * nullptr. A proxy that read another length would see one request where the gateway sees
 * two (a desync: request smuggling), and evhttp 2.1.12 reads no body of a HEAD (its body is
 * parsed as the connection's next request), goes by the first of several Content-Lengths,
 * reads a body whose Transfer-Encoding is not chunked to the connection's end, and refuses
 * a Transfer-Encoding beside a Content-Length on POST only. So: a HEAD with a body
 * (body_not_allowed); a Transfer-Encoding beside a Content-Length, one other than chunked,
 * or Content-Lengths that differ (bad_framing). */
static const char *framing_error(evhttp_request *req)
{
	const char *cl = nullptr;
	int te = 0;
	bool cl_differ = false, te_chunked = false;
	evkeyvalq *in = evhttp_request_get_input_headers(req);
	for (evkeyval *kv = in->tqh_first; kv; kv = kv->next.tqe_next) {
		if (evutil_ascii_strcasecmp(kv->key, "transfer-encoding") == 0) {
			te++;
			te_chunked = evutil_ascii_strcasecmp(kv->value, "chunked") == 0;
		} else if (evutil_ascii_strcasecmp(kv->key, "content-length") == 0) {
			cl_differ = cl_differ || (cl && std::strcmp(cl, kv->value) != 0);
			cl = kv->value;
		}
	}
	if ((te > 0 && (cl || te > 1 || !te_chunked)) || cl_differ)
		return "bad_framing";
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD &&
	    (te > 0 || (cl && std::string_view(cl) != "0")))
		return "body_not_allowed";
	return nullptr;
}

void server::impl::on_request(evhttp_request *req)
{
	requests++;
	/* on every way out: the room the request's admission held is free (its body, if it
	 * waits for the mesh, is committed by then) */
	struct settle {
		impl *gw;
		~settle() { gw->admit_waiting(); }
	} settle_at_end{this};
	const uint64_t guard = guard_for(req);
	if (auto g = guards.find(guard); g != guards.end())
		request_whole(g->second);
	const char *method = nullptr;
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET: method = "GET"; break;
	case EVHTTP_REQ_POST: method = "POST"; break;
	case EVHTTP_REQ_HEAD: method = "HEAD"; break;
	case EVHTTP_REQ_PUT: method = "PUT"; break;
	case EVHTTP_REQ_DELETE: method = "DELETE"; break;
	case EVHTTP_REQ_OPTIONS: method = "OPTIONS"; break;
	case EVHTTP_REQ_PATCH: method = "PATCH"; break;
	default: break;
	}
	if (!method) {
		/* TRACE or CONNECT (evhttp answers a method it does not know itself, 501 and
		 * Connection: close): refused, and the connection closed once the answer is
		 * written. evhttp 2.1.12 keeps a CONNECT's connection open whatever the answer
		 * says (for a tunnel), and would parse what follows as the next request */
		refused["method"]++;
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		evhttp_request_set_on_complete_cb(req, [](evhttp_request *r, void *a) {
			static_cast<impl *>(a)->close_after(r);
		}, this);
		return reply_error(req, guard, 501, "method_not_implemented");
	}
	if (const char *why = framing_error(req)) {
		/* refused, and the connection closed after the answer: what follows on it is not
		 * read as a request */
		refused[why]++;
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		return reply_error(req, guard, 400, why);
	}
	const evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *upath = uri ? evhttp_uri_get_path(uri) : nullptr;
	const char *query = uri ? evhttp_uri_get_query(uri) : nullptr;
	std::string path = upath && *upath ? upath : "/";
	if (query)
		path += std::string("?") + query;
	const route *rt = match_route(cfg, path);
	if (!rt) {
		refused["no_route"]++;
		return reply_error(req, guard, 404, "no_route");
	}
	if (pend.size() >= cfg.max_pending) {
		refused["overloaded"]++;
		return reply_error(req, guard, 503, "overloaded");
	}
	std::vector<std::pair<std::string, std::string>> headers;
	evkeyvalq *in = evhttp_request_get_input_headers(req);
	for (evkeyval *kv = in->tqh_first; kv; kv = kv->next.tqe_next)
		headers.emplace_back(kv->key, kv->value);
	const uint64_t corr = (salt << 24) ^ next_corr++;
	char rid[40];
	std::snprintf(rid, sizeof(rid), "%016" PRIx64 "-%" PRIu64, salt, corr & 0xffffff);
	size_t l7_len = 0;
	int st = build_request_l7(rt->service, method, path, cfg.request_ms, headers, rid,
				  l7buf.data(), l7buf.size(), &l7_len);
	if (st != 0) {
		refused[st == 431 ? "header_too_large" : "bad_header"]++;
		return reply_error(req, guard, st, st == 431 ? "header_too_large" : "bad_header");
	}
	evbuffer *body = evhttp_request_get_input_buffer(req);
	const size_t body_len = evbuffer_get_length(body);
	const uint8_t *body_data = body_len ? evbuffer_pullup(body, -1) : nullptr;
	bytes_in += body_len;
	const size_t ri = static_cast<size_t>(rt - cfg.routes.data());
	const uint32_t ni = rt->nodes[rr[ri]++ % rt->nodes.size()];
	const node &n = cfg.nodes[ni];
	meshsock::out_message m{wire::frame_kind::request, next_msg_id++, corr,
				{l7buf.data(), l7_len}, {body_data, body_len}};
	int rc = meshsock::send_message(
		fd, reinterpret_cast<const sockaddr *>(&n.addr.sa), n.addr.len, m,
		meshsock::slice_for_mtu(cfg.mtu, n.addr.sa.ss_family == AF_INET6));
	if (rc != 0) {
		send_errors++;
		return reply_error(req, guard, 503, "send_failed");
	}
	auto p = std::make_unique<pending>();
	p->gw = this;
	p->corr = corr;
	p->req = req;
	p->guard = guard;
	p->node = ni;
	p->start_ms = now_ms();
	p->start = std::chrono::steady_clock::now();
	p->held = body_len;
	hold_committed(body_len);
	/* the node answers within request_ms (its deadline); the gateway waits a little longer
	 * so a node's own 504 wins when both fire */
	p->timer = evtimer_new(base, [](evutil_socket_t, short, void *arg) {
		auto *pp = static_cast<pending *>(arg);
		pp->gw->on_timeout(pp);
	}, p.get());
	timeval tv{static_cast<time_t>((cfg.request_ms + 250) / 1000),
		   static_cast<suseconds_t>(((cfg.request_ms + 250) % 1000) * 1000)};
	evtimer_add(p->timer, &tv);
	pend.emplace(corr, std::move(p));
}

/* req's answer is written (evhttp_send_done, before it reads on): the bytes read after req
 * are dropped unparsed, and the connection is shut, so that evhttp's next read sees the end
 * of file and frees it. */
void server::impl::close_after(evhttp_request *req)
{
	evhttp_connection *c = evhttp_request_get_connection(req);
	bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : nullptr;
	if (!bev)
		return;
	evbuffer *in = bufferevent_get_input(bev);
	evbuffer_drain(in, evbuffer_get_length(in));
	if (auto id = guard_of.find(bev); id != guard_of.end()) {
		if (auto g = guards.find(id->second); g != guards.end() && !g->second.closing) {
			g->second.closing = true;
			drop_reading(g->second);
			admit_waiting();
		}
	}
	evutil_socket_t s = bufferevent_getfd(bev);
	if (s >= 0)
		shutdown(s, SHUT_RDWR);
}

void server::impl::on_timeout(pending *p)
{
	timeouts++;
	mesh_errors["timeout"]++;
	auto it = pend.find(p->corr);
	event_free(p->timer);
	reply_error(p->req, p->guard, 504, "timeout");
	finish(it, p->held);
}

size_t head_scanner::feed(const uint8_t *p, size_t n) noexcept
{
	size_t k = 0;
	while (k < n && !done) {
		const uint8_t c = p[k++];
		if (c == '\r') {
			line_cr = line_cr || cr;
			cr = true;
			continue;
		}
		if (c == '\n') {
			cr = false;
			if (line_len > 0) {
				if (lines > 0)
					header_line();
				lines++, line_len = 0;
			} else if (lines > 0) {
				done = true;
			}
			line_cr = false;
			continue;
		}
		line_cr = line_cr || cr;
		cr = false;
		if (lines == 0 && method_len < sizeof(method))
			method[method_len++] = static_cast<char>(c);
		if (lines > 0 && line_len < line_keep)
			line[line_len] = static_cast<char>(c);
		line_len++;
	}
	return k;
}

/* ASCII letters of a and b alike but for their case. */
static bool same_name(std::string_view a, std::string_view b) noexcept
{
	auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
	return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) {
		       return lower(x) == lower(y);
	       });
}

/* A header line ended (its first line_keep bytes in `line`): a Content-Length read, or the
 * body's length made unknown. evhttp 2.1.12 splits a line at its first colon, takes a line
 * that begins with a blank as more of the header before, and finds headers by name without
 * regard to case. */
void head_scanner::header_line() noexcept
{
	const std::string_view l(line, std::min(line_len, line_keep));
	if (l[0] == ' ' || l[0] == '\t') {
		unknown = unknown || last_cl;
		return;
	}
	last_cl = false;
	const size_t colon = l.find(':');
	if (colon == std::string_view::npos)
		return; /* a name longer than the bytes kept: neither of these */
	const std::string_view name = l.substr(0, colon);
	if (same_name(name, "transfer-encoding")) {
		unknown = true;
		return;
	}
	if (!same_name(name, "content-length"))
		return;
	last_cl = true;
	lengths = static_cast<uint8_t>(std::min(lengths + 1, 2));
	std::string_view v = l.substr(colon + 1);
	while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
		v.remove_prefix(1);
	while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
		v.remove_suffix(1);
	if (lengths > 1 || line_len > line_keep || line_cr || v.empty() || v.size() > 19 ||
	    !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
		unknown = true;
		return;
	}
	length = 0;
	for (char c : v)
		length = length * 10 + uint64_t(c - '0');
}

bool head_scanner::body_method() const noexcept
{
	const std::string_view m(method, method_len);
	for (std::string_view b :
	     {"POST ", "PUT ", "PATCH ", "GET ", "DELETE ", "OPTIONS ", "CONNECT "})
		if (m.starts_with(b))
			return true;
	return false;
}

uint64_t head_scanner::body_bytes(uint64_t most) const noexcept
{
	if (!body_method())
		return 0;
	if (unknown)
		return most;
	return lengths == 0 ? 0 : std::min(length, most);
}

/* The memory bound (limits.max_buffered_bytes), by admission: a request whose header block
 * announces a body (head_scanner::body_bytes) reads it only once admitted, and admission
 * reserves its header block and the body it announces (its Content-Length; max_body_bytes
 * for a chunked body or a length stated unclearly), at least the bytes already read. Admitted requests and the
 * bodies of requests waiting for the mesh are the committed bytes, and they stay within the
 * bound; a request that does not fit waits, its connection's reading paused at the end of
 * its header block (the kernel's receive buffer and TCP's window hold the sender), and is
 * admitted in turn (oldest first) as answers free room. An admitted request always reads to
 * its end, so bodies read in part never fill the bound with nothing to bring it down. What
 * is read before admission (a header block, at most max_header_bytes, and the rest of the
 * read that ended it) is held too, bounded by the connections: counted in `buffered`.
 *
 * The gateway sees the bytes as they are read (the input buffer's callback, before evhttp
 * parses them) and finds the end of the header block itself: evhttp 2.1 has no hook between
 * a request's header and its body for a server. */
void server::impl::scan(conn_guard &g, evbuffer *in, size_t from)
{
	if (g.head.done)
		return;
	/* no further than a header block can go (past it, evhttp refuses the block): the peek
	 * walks the buffer's chains, and a pipelining client's buffer can hold many */
	const size_t have = evbuffer_get_length(in);
	const size_t len = std::min<size_t>(have, from + head_limit());
	size_t off = from;
	while (off < len && !g.head.done) {
		evbuffer_ptr at;
		evbuffer_iovec v[8];
		if (evbuffer_ptr_set(in, &at, off, EVBUFFER_PTR_SET) != 0)
			return;
		const int n = evbuffer_peek(in, static_cast<ev_ssize_t>(len - off), &at, v, 8);
		if (n <= 0)
			return;
		for (int i = 0; i < std::min(n, 8) && off < len && !g.head.done; i++)
			off += g.head.feed(static_cast<const uint8_t *>(v[i].iov_base),
					   std::min(v[i].iov_len, len - off));
	}
	if (!g.head.done)
		return;
	/* the bytes of the request up to its block's end: those read less those after it */
	g.head_bytes = g.reading - std::min<uint64_t>(g.reading, have - off);
	if (g.head.body_bytes(cfg.max_body_bytes) != 0 && !try_admit(g)) {
		g.waiting = true;
		admission.push_back(g.id);
		read_pauses++;
	}
}

/* Admits g's body if its reservation (its header block and the body it announces, or
 * max_body_bytes where it does not say; at least what is read) fits within the bound, or if
 * nothing is committed (the bound is at least max_body_bytes, but the bytes read before the
 * body come on top). */
bool server::impl::try_admit(conn_guard &g)
{
	const uint64_t need =
		std::max(g.reading, g.head_bytes + g.head.body_bytes(cfg.max_body_bytes));
	if (committed != 0 && committed + need > cfg.max_buffered_bytes)
		return false;
	g.admitted = true;
	g.reserve = need;
	committed += need;
	return true;
}

/* Bytes read on a client connection (its input buffer's callback: before evhttp sees them).
 * Reading pauses for a request waiting for admission, and for bytes read ahead: while evhttp
 * writes an answer it keeps reading on (to see the client close) without parsing, and a
 * pipelining client's next requests would pile up. Read ahead is what passes the request's
 * allowance: its reservation once admitted, else head_limit() (a header block, or a request
 * without a body, and a read). evhttp turns reading on again at each new request and while
 * it writes an answer: a paused connection is paused again at its next read. */
void server::impl::on_read(conn_guard &g, evbuffer *in, size_t n)
{
	g.reading += n;
	hold(n);
	const size_t len = evbuffer_get_length(in);
	scan(g, in, len >= n ? len - n : 0);
	bool pause = g.waiting;
	if (g.admitted && g.reading > g.reserve) {
		/* an admitted request is read to its end, even where a chunked body's framing
		 * takes it past its reservation; past it while evhttp is not parsing, it is read
		 * ahead */
		pause = pause || callbacks_of(g.bev).rd == nullptr;
		committed += g.reading - g.reserve;
		g.reserve = g.reading;
	} else if (!g.admitted && g.reading > head_limit()) {
		pause = true;
	}
	if (pause && (bufferevent_get_enabled(g.bev) & EV_READ))
		bufferevent_disable(g.bev, EV_READ);
}

/* Whether evhttp still has g's connection and holds no request of it for the gateway (its
 * reading is then the gateway's to turn on; else evhttp turns it on when it answers). */
static bool readable(const conn_guard &g)
{
	return callbacks_of(g.bev).ev != nullptr && g.busy == 0 && !g.closing;
}

/* Room freed: the waiting requests admitted in turn, oldest first, while they fit. */
void server::impl::admit_waiting()
{
	while (!admission.empty()) {
		auto it = guards.find(admission.front());
		if (it == guards.end() || !it->second.waiting || it->second.closing) {
			admission.pop_front();
			continue;
		}
		conn_guard &g = it->second;
		if (!try_admit(g))
			return;
		admission.pop_front();
		g.waiting = false;
		if (readable(g))
			bufferevent_enable(g.bev, EV_READ);
	}
}

/* Bytes of answers added to a connection's output buffer, or written from it (its callback).
 * They are held until written, and committed: while clients that read slowly hold answers,
 * requests wait for admission as they do for bodies. What the kernel's send buffer takes
 * is written, for the gateway. */
void server::impl::on_write(conn_guard &g, size_t added, size_t deleted)
{
	g.writing += added;
	answers += added;
	hold_committed(added);
	const uint64_t d = std::min<uint64_t>(deleted, g.writing);
	g.writing -= d;
	answers -= std::min(answers, d);
	let_go(d);
	if (d != 0 && !admission.empty())
		admit_waiting();
}

/* A guard's connection is gone (or the gateway stops): its callbacks removed, every byte it
 * held out of the counts. */
void server::impl::forget(conn_guard &g)
{
	drop_reading(g);
	if (g.input_cb)
		evbuffer_remove_cb_entry(bufferevent_get_input(g.bev), g.input_cb);
	if (g.output_cb)
		evbuffer_remove_cb_entry(bufferevent_get_output(g.bev), g.output_cb);
	g.input_cb = g.output_cb = nullptr;
	answers -= std::min(answers, g.writing);
	let_go(g.writing);
	g.writing = 0;
}

/* A guard's bytes leave the counts: its request is whole, or its connection gone. */
void server::impl::drop_reading(conn_guard &g)
{
	buffered -= std::min(buffered, g.reading);
	g.reading = 0;
	g.head_bytes = 0;
	if (g.admitted) {
		committed -= std::min(committed, g.reserve);
		g.admitted = false;
		g.reserve = 0;
	}
	g.waiting = false;
}

/* g's request is whole (evhttp hands it to on_request): its admission ends, and the bytes
 * evhttp has not parsed yet (the next request's, pipelined) begin the next one. */
void server::impl::request_whole(conn_guard &g)
{
	g.busy++;
	drop_reading(g);
	g.head = head_scanner{};
	evbuffer *in = bufferevent_get_input(g.bev);
	g.reading = evbuffer_get_length(in);
	hold(g.reading);
	scan(g, in, 0);
}

/* A pending request answered (its answer queued): its body's bytes leave the counts, and
 * room is freed. */
void server::impl::finish(std::unordered_map<uint64_t, std::unique_ptr<pending>>::iterator it,
			  uint64_t held)
{
	pend.erase(it);
	release(held);
}

void server::impl::release(uint64_t held)
{
	let_go(held);
	admit_waiting();
}

void server::impl::on_datagrams()
{
	std::vector<meshsock::message> done;
	rx.drain(fd, reasm, now_ms(), &done);
	for (meshsock::message &m : done)
		on_message(m);
}

void server::impl::on_message(meshsock::message &m)
{
	auto it = pend.find(m.correlation);
	if (m.kind != wire::frame_kind::response || it == pend.end()) {
		unmatched++;
		return;
	}
	pending *p = it->second.get();
	/* only the node the request went to may answer it */
	if (!(m.src == meshsock::endpoint_of(cfg.nodes[p->node].addr.sa))) {
		unmatched++;
		return;
	}
	event_free(p->timer);
	std::unique_ptr<pending> own = std::move(it->second);
	pend.erase(it);
	/* the body's room is freed once the answer is in the connection's output buffer (on
	 * every way out), or the room would go to a waiting request before the answer counts */
	struct settle {
		impl *gw;
		uint64_t held;
		~settle() { gw->release(held); }
	} settle_at_end{this, own->held};
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - p->start).count();
	latency_sum += secs;
	size_t b = 0;
	while (b < nb_buckets && secs > latency_buckets[b])
		b++;
	latency[b]++;
	wire::l7_view v;
	if (wire::l7_decode(m.data.data(), m.l7_len, &v) != wire::l7_error::ok ||
	    v.kind != wire::l7_kind::response) {
		mesh_errors["bad_response"]++;
		return reply_error(p->req, p->guard, 502, "bad_response");
	}
	if (v.flags & wire::l7_flag_mesh_generated) {
		std::string reason(v.reason.empty() ? "mesh_error" : v.reason);
		std::string hop(v.hop.empty() ? "mesh" : v.hop);
		count_mesh_error(reason);
		return reply_error(p->req, p->guard, http_status_for_mesh(v.status, reason),
				   reason.c_str(), hop.c_str());
	}
	if (v.status < 200) {
		/* an interim status cannot be the one answer of a request: passed on, the client
		 * would wait for another after it, and take the next request's for it */
		mesh_errors["bad_response"]++;
		return reply_error(p->req, p->guard, 502, "bad_response");
	}
	evkeyvalq *out = evhttp_request_get_output_headers(p->req);
	std::string name, value;
	v.for_each([&](std::string_view n, std::string_view val) {
		if (is_hop_by_hop(n))
			return;
		name.assign(n);
		value.assign(val);
		evhttp_add_header(out, name.c_str(), value.c_str());
	});
	if (!evhttp_find_header(out, "content-type")) /* else evhttp would say text/html */
		evhttp_add_header(out, "Content-Type", "application/octet-stream");
	evbuffer *buf = evbuffer_new();
	auto body = m.body();
	/* no body after a 204 or a 304, nor in the answer to a HEAD (RFC 9110 6.4.1): evhttp
	 * would write one anyway, and the client would read it as the next answer */
	if (v.status == 204 || v.status == 304 ||
	    evhttp_request_get_command(p->req) == EVHTTP_REQ_HEAD)
		body = body.first(0);
	if (body.size() > chunked_above) {
		/* large bodies go out in 64 KiB pieces: chunked to HTTP/1.1 clients, with their
		 * length to older ones (no chunked coding there; evhttp would state the length it
		 * holds as the answer begins, 0, to a 1.0 keep-alive request, and the client take
		 * the body for its next answer). The pod's own length is left out (hop-by-hop).
		 * evhttp 2.1 tells a request's version through http_struct.h only. */
		const evhttp_request *r = p->req;
		if (r->major < 1 || (r->major == 1 && r->minor < 1))
			evhttp_add_header(out, "Content-Length", std::to_string(body.size()).c_str());
		responses[v.status]++;
		bytes_out += body.size();
		auto g = guards.find(p->guard);
		if (g != guards.end() && g->second.busy > 0 && --g->second.busy == 0)
			g->second.since_ms = now_ms();
		evhttp_send_reply_start(p->req, v.status, reason_phrase(v.status));
		for (size_t off = 0; off < body.size(); off += 65536) {
			evbuffer_add(buf, body.data() + off, std::min<size_t>(65536, body.size() - off));
			evhttp_send_reply_chunk(p->req, buf);
		}
		evhttp_send_reply_end(p->req);
	} else {
		if (!body.empty())
			evbuffer_add(buf, body.data(), body.size());
		reply(p->req, p->guard, v.status, buf);
	}
	evbuffer_free(buf);
}

void server::impl::sweep()
{
	const uint64_t now = now_ms();
	bool freed = false;
	for (auto it = guards.begin(); it != guards.end();) {
		conn_guard &g = it->second;
		if (callbacks_of(g.bev).ev == nullptr) { /* evhttp freed the connection */
			forget(g);
			guard_of.erase(g.bev);
			bufferevent_decref(g.bev);
			it = guards.erase(it);
			freed = true;
			continue;
		}
		if (!g.closing && g.busy == 0 && now - g.since_ms > cfg.read_ms) {
			/* no whole request in time (slow sender, or idle keep-alive): EOF makes
			 * evhttp close and free the connection */
			g.closing = true;
			slow_closed++;
			evutil_socket_t s = bufferevent_getfd(g.bev);
			if (s >= 0)
				shutdown(s, SHUT_RDWR);
			/* its bytes leave the counts; and a connection the memory bound paused
			 * reads again, or evhttp would never see the end of file */
			drop_reading(g);
			bufferevent_enable(g.bev, EV_READ);
			freed = true;
		}
		++it;
	}
	if (freed) /* their admissions' room */
		admit_waiting();
	/* accepting again: the connections evhttp freed are out of the count by now, and a
	 * listener an accept error paused tries again (if it fails, paused for another
	 * sweep: one try every 100 ms, not a loop) */
	if (at_cap && guards.size() < max_conns)
		at_cap = false;
	listen_gate.paused = admin_gate.paused = false;
	set_accepting();
	reasm.expire(now);
}

/* A mesh error counted under its reason's label: "invalid" for one that is not a token,
 * "other" once max_reason_labels are taken. */
void server::impl::count_mesh_error(std::string_view reason)
{
	std::string label(mesh_reason_label(reason));
	auto it = mesh_errors.find(label);
	if (it == mesh_errors.end() && mesh_errors.size() >= max_reason_labels)
		it = mesh_errors.try_emplace("other", 0).first;
	else if (it == mesh_errors.end())
		it = mesh_errors.emplace(std::move(label), 0).first;
	it->second++;
}

/* Each listener enabled or disabled as its gate says (a call only on a change). */
void server::impl::set_accepting()
{
	for (accept_gate *g : {&listen_gate, &admin_gate}) {
		if (!g->l)
			continue;
		const bool on = !g->paused && !(g == &listen_gate && at_cap);
		if (on == g->enabled)
			continue;
		g->enabled = on;
		if (on)
			evconnlistener_enable(g->l);
		else
			evconnlistener_disable(g->l);
	}
}

void server::impl::on_accept_error(accept_gate &g, int err)
{
	const bool fds = err == EMFILE || err == ENFILE;
	accept_paused[fds ? "fd_limit" : "accept_error"]++;
	g.paused = true;
	set_accepting();
	const uint64_t now = now_ms();
	if (g.logged_ms != 0 && now - g.logged_ms < accept_log_ms) {
		g.unlogged++;
		return;
	}
	char since[96] = "";
	if (g.unlogged)
		std::snprintf(since, sizeof(since), "; %" PRIu64 " more since the last such line",
			      g.unlogged);
	std::fprintf(stderr,
		     "dpumesh-gateway: %s %s: accept: %s (%zu client connections open); "
		     "accepting again in 100 ms%s\n",
		     g.what, g.addr.c_str(), evutil_socket_error_to_string(err), guards.size(),
		     since);
	g.logged_ms = now;
	g.unlogged = 0;
}

void server::impl::add_gate(accept_gate &g, evhttp_bound_socket *bs, const char *what,
			    const address &a)
{
	g.gw = this;
	g.l = evhttp_bound_socket_get_listener(bs);
	g.what = what;
	g.addr = a.str();
	{
		std::lock_guard<std::mutex> lk(gates_mu);
		gates[g.l] = &g;
	}
	evconnlistener_set_error_cb(g.l, [](evconnlistener *l, void *) {
		const int err = EVUTIL_SOCKET_ERROR();
		if (accept_gate *ag = gate_of(l))
			ag->gw->on_accept_error(*ag, err);
	});
}

/* The connection cap: cfg.max_connections, with the soft RLIMIT_NOFILE raised toward it
 * (up to the hard limit) and the cap held fd_reserve below what it could not reach. */
static uint32_t connection_cap(const config &cfg)
{
	rlimit rl{};
	const rlim_t want = rlim_t(cfg.max_connections) + fd_reserve;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= want)
		return cfg.max_connections;
	rlimit up = rl;
	up.rlim_cur = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want) ? want : rl.rlim_max;
	if (up.rlim_cur > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &up) == 0)
		rl = up;
	if (rl.rlim_cur >= want)
		return cfg.max_connections;
	return static_cast<uint32_t>(rl.rlim_cur > 2 * fd_reserve ? rl.rlim_cur - fd_reserve
								   : std::max<rlim_t>(1, rl.rlim_cur / 2));
}

std::string render_metrics(const server::impl &g);

server::server(std::unique_ptr<impl> p) : _p(std::move(p)) {}
server::~server() = default;

result<std::unique_ptr<server>> server::create(const config &cfg, event_base *base)
{
	auto p = std::make_unique<impl>(cfg);
	impl *g = p.get();
	g->base = base;
	g->fd = socket(cfg.mesh_bind.sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (g->fd < 0)
		return errorf("mesh socket: %s", std::strerror(errno));
	int sz = static_cast<int>(cfg.rcvbuf);
	if (setsockopt(g->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) != 0)
		setsockopt(g->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(g->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) != 0)
		setsockopt(g->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (bind(g->fd, reinterpret_cast<const sockaddr *>(&cfg.mesh_bind.sa), cfg.mesh_bind.len) != 0)
		return errorf("mesh socket: bind %s: %s", cfg.mesh_bind.str().c_str(),
			      std::strerror(errno));
	/* only the nodes answer: anyone else's datagrams are dropped before they can take the
	 * reassembler's budget (on_message checks the node of each answer) */
	std::vector<wire::endpoint> nodes;
	for (const node &n : cfg.nodes)
		nodes.push_back(meshsock::endpoint_of(n.addr.sa));
	g->rx.only_from(std::move(nodes));
	g->rx_ev = event_new(base, g->fd, EV_READ | EV_PERSIST, [](evutil_socket_t, short, void *a) {
		static_cast<impl *>(a)->on_datagrams();
	}, g);
	event_add(g->rx_ev, nullptr);
	g->sweep_ev = event_new(base, -1, EV_PERSIST, [](evutil_socket_t, short, void *a) {
		static_cast<impl *>(a)->sweep();
	}, g);
	timeval sweep_tv{0, 100000};
	event_add(g->sweep_ev, &sweep_tv);

	g->http = evhttp_new(base);
	evhttp_set_max_headers_size(g->http, cfg.max_header_bytes);
	evhttp_set_max_body_size(g->http, cfg.max_body_bytes);
	timeval idle{static_cast<time_t>(cfg.idle_ms / 1000),
		     static_cast<suseconds_t>((cfg.idle_ms % 1000) * 1000)};
	evhttp_set_timeout_tv(g->http, &idle);
	/* the seven the gateway serves, and TRACE and CONNECT, which it refuses itself
	 * (on_request); evhttp answers any other 501 */
	evhttp_set_allowed_methods(g->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
						    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH |
						    EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT);
	evhttp_set_bevcb(g->http, [](event_base *b, void *a) -> bufferevent * {
		auto *gi = static_cast<impl *>(a);
		bufferevent *bev = bufferevent_socket_new(b, -1, BEV_OPT_CLOSE_ON_FREE);
		if (!bev)
			return nullptr;
		bufferevent_incref(bev);
		uint64_t id = gi->next_guard++;
		conn_guard &cg = gi->guards.try_emplace(id).first->second;
		cg.bev = bev;
		cg.since_ms = now_ms();
		cg.gw = gi;
		cg.id = id;
		/* every byte read on the connection, counted against max_buffered_bytes (the
		 * guard's address is stable: an unordered_map's elements do not move) */
		cg.input_cb = evbuffer_add_cb(
			bufferevent_get_input(bev),
			[](evbuffer *buf, const evbuffer_cb_info *info, void *arg) {
				auto *cgp = static_cast<conn_guard *>(arg);
				if (info->n_added)
					cgp->gw->on_read(*cgp, buf, info->n_added);
			},
			&cg);
		/* and every byte of an answer until written (impl::on_write) */
		cg.output_cb = evbuffer_add_cb(
			bufferevent_get_output(bev),
			[](evbuffer *, const evbuffer_cb_info *info, void *arg) {
				auto *cgp = static_cast<conn_guard *>(arg);
				cgp->gw->on_write(*cgp, info->n_added, info->n_deleted);
			},
			&cg);
		gi->guard_of[bev] = id;
		gi->connections++;
		if (gi->guards.size() >= gi->max_conns && !gi->at_cap) {
			/* the rest wait in the listen backlog until the sweep finds one closed */
			gi->at_cap = true;
			gi->accept_paused["max_connections"]++;
			gi->set_accepting();
		}
		return bev;
	}, g);
	evhttp_set_gencb(g->http, [](evhttp_request *req, void *a) {
		static_cast<impl *>(a)->on_request(req);
	}, g);
	g->max_conns = connection_cap(cfg);
	evhttp_bound_socket *bs =
		evhttp_bind_socket_with_handle(g->http, cfg.listen.host.c_str(), cfg.listen.port);
	if (!bs)
		return errorf("listen %s: %s", cfg.listen.str().c_str(), std::strerror(errno));
	g->add_gate(g->listen_gate, bs, "listen", cfg.listen);
	if (cfg.admin.port != 0) {
		g->admin = evhttp_new(base);
		evhttp_set_timeout_tv(g->admin, &idle);
		evhttp_set_max_headers_size(g->admin, admin_max_header_bytes);
		evhttp_set_max_body_size(g->admin, 0);
		evhttp_set_allowed_methods(g->admin, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
		evhttp_set_gencb(g->admin, [](evhttp_request *req, void *a) {
			auto *gi = static_cast<impl *>(a);
			const char *u = evhttp_request_get_uri(req);
			evbuffer *buf = evbuffer_new();
			int st = 200;
			if (std::strcmp(u, "/metrics") == 0) {
				std::string m = render_metrics(*gi);
				evbuffer_add(buf, m.data(), m.size());
				evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
						  "text/plain; version=0.0.4");
			} else if (std::strcmp(u, "/healthz") == 0) {
				evbuffer_add(buf, "ok\n", 3);
			} else {
				st = 404;
				evbuffer_add(buf, "not found\n", 10);
			}
			evhttp_send_reply(req, st, reason_phrase(st), buf);
			evbuffer_free(buf);
		}, g);
		evhttp_bound_socket *as = evhttp_bind_socket_with_handle(
			g->admin, cfg.admin.host.c_str(), cfg.admin.port);
		if (!as)
			return errorf("admin listen %s: %s", cfg.admin.str().c_str(),
				      std::strerror(errno));
		g->add_gate(g->admin_gate, as, "admin", cfg.admin);
	}
	return std::unique_ptr<server>(new server(std::move(p)));
}

std::string render_metrics(const server::impl &g)
{
	std::string o;
	auto line = [&](const std::string &s) { o += s + "\n"; };
	/* a metric without labels: its help, its type, its value */
	auto one = [&](const char *name, const char *type, const char *help, uint64_t v) {
		line(std::string("# HELP ") + name + " " + help);
		line(std::string("# TYPE ") + name + " " + type);
		line(std::string(name) + " " + std::to_string(v));
	};
	/* a counter by reason: its help, its type, a line per reason */
	auto by_reason = [&](const std::string &name, const char *help,
			     const std::map<std::string, uint64_t> &counts) {
		line("# HELP " + name + " " + help);
		line("# TYPE " + name + " counter");
		for (const auto &[r, n] : counts)
			line(name + "{reason=\"" + r + "\"} " + std::to_string(n));
	};
	one("dpumesh_ingress_requests_total", "counter", "HTTP requests read whole", g.requests);
	line("# HELP dpumesh_ingress_responses_total HTTP responses by status");
	line("# TYPE dpumesh_ingress_responses_total counter");
	for (const auto &[code, n] : g.responses)
		line("dpumesh_ingress_responses_total{code=\"" + std::to_string(code) + "\"} " +
		     std::to_string(n));
	by_reason("dpumesh_ingress_mesh_errors_total",
		  "mesh-generated errors and gateway time-outs by reason", g.mesh_errors);
	by_reason("dpumesh_ingress_refused_total", "requests refused by the gateway itself",
		  g.refused);
	line("# TYPE dpumesh_ingress_pending gauge");
	line("dpumesh_ingress_pending " + std::to_string(g.pend.size()));
	line("# TYPE dpumesh_ingress_connections_total counter");
	line("dpumesh_ingress_connections_total " + std::to_string(g.connections));
	line("# TYPE dpumesh_ingress_connections_open gauge");
	line("dpumesh_ingress_connections_open " + std::to_string(g.guards.size()));
	one("dpumesh_ingress_max_connections", "gauge",
	    "client connections open at most (limits.max_connections, or lower: the fd limit)",
	    g.max_conns);
	one("dpumesh_ingress_buffered_bytes", "gauge",
	    "bytes held: requests being read, bodies waiting for the mesh, answers not written yet",
	    g.buffered);
	one("dpumesh_ingress_buffered_bytes_peak", "gauge",
	    "the most bytes held at once",
	    g.buffered_peak);
	one("dpumesh_ingress_committed_bytes", "gauge",
	    "bytes committed: admitted bodies' reservations, bodies waiting for the mesh, answers "
	    "not written yet",
	    g.committed);
	one("dpumesh_ingress_answer_bytes", "gauge",
	    "answer bytes not written to clients yet (in buffered and committed bytes)",
	    g.answers);
	one("dpumesh_ingress_max_buffered_bytes", "gauge",
	    "bytes committed at most before requests wait for admission (limits.max_buffered_bytes)",
	    g.cfg.max_buffered_bytes);
	one("dpumesh_ingress_read_paused_total", "counter",
	    "requests that waited for admission (max_buffered_bytes), their connection's reading paused",
	    g.read_pauses);
	by_reason("dpumesh_ingress_accept_paused_total",
		  "times a listener stopped accepting: at max_connections, out of file "
		  "descriptors, another accept error",
		  g.accept_paused);
	one("dpumesh_ingress_slow_closed_total", "counter",
	    "connections closed for not sending a whole request in time",
	    g.slow_closed);
	one("dpumesh_ingress_foreign_datagrams_total", "counter",
	    "mesh datagrams dropped before reassembly: from an address and port not in nodes",
	    g.rx.foreign());
	line("# TYPE dpumesh_ingress_unmatched_total counter");
	line("dpumesh_ingress_unmatched_total " + std::to_string(g.unmatched));
	line("# TYPE dpumesh_ingress_send_errors_total counter");
	line("dpumesh_ingress_send_errors_total " + std::to_string(g.send_errors));
	line("# TYPE dpumesh_ingress_body_bytes_total counter");
	line("dpumesh_ingress_body_bytes_total{dir=\"in\"} " + std::to_string(g.bytes_in));
	line("dpumesh_ingress_body_bytes_total{dir=\"out\"} " + std::to_string(g.bytes_out));
	line("# HELP dpumesh_ingress_reassembly_drops_total mesh datagrams dropped by the reassembler");
	line("# TYPE dpumesh_ingress_reassembly_drops_total counter");
	for (size_t d = 1; d < g.reasm.stats().drops.size(); d++)
		if (g.reasm.stats().drops[d])
			line(std::string("dpumesh_ingress_reassembly_drops_total{reason=\"") +
			     wire::wire_drop_name(static_cast<wire::wire_drop>(d)) + "\"} " +
			     std::to_string(g.reasm.stats().drops[d]));
	line("# HELP dpumesh_ingress_mesh_latency_seconds request sent to the mesh -> answer");
	line("# TYPE dpumesh_ingress_mesh_latency_seconds histogram");
	uint64_t cum = 0;
	char le[32];
	for (size_t b = 0; b < nb_buckets; b++) {
		cum += g.latency[b];
		std::snprintf(le, sizeof(le), "%g", latency_buckets[b]);
		line(std::string("dpumesh_ingress_mesh_latency_seconds_bucket{le=\"") + le + "\"} " +
		     std::to_string(cum));
	}
	cum += g.latency[nb_buckets];
	line("dpumesh_ingress_mesh_latency_seconds_bucket{le=\"+Inf\"} " + std::to_string(cum));
	char sum[64];
	std::snprintf(sum, sizeof(sum), "%.6f", g.latency_sum);
	line(std::string("dpumesh_ingress_mesh_latency_seconds_sum ") + sum);
	line("dpumesh_ingress_mesh_latency_seconds_count " + std::to_string(cum));
	return o;
}

std::string server::metrics() const { return render_metrics(*_p); }

uint32_t server::max_connections() const { return _p->max_conns; }

std::string server::summary() const
{
	const impl &g = *_p;
	uint64_t ok = 0, err4 = 0, err5 = 0;
	for (const auto &[code, n] : g.responses)
		(code < 400 ? ok : code < 500 ? err4 : err5) += n;
	std::string reasons;
	for (const auto &[r, n] : g.mesh_errors)
		reasons += (reasons.empty() ? "" : ",") + r + ":" + std::to_string(n);
	return "requests=" + std::to_string(g.requests) + " ok=" + std::to_string(ok) +
	       " client_errors=" + std::to_string(err4) + " server_errors=" + std::to_string(err5) +
	       " timeouts=" + std::to_string(g.timeouts) + " unmatched=" +
	       std::to_string(g.unmatched) + " slow_closed=" + std::to_string(g.slow_closed) +
	       " connections=" + std::to_string(g.connections) + " pending=" +
	       std::to_string(g.pend.size()) + " mesh_errors=" + (reasons.empty() ? "-" : reasons);
}

} // namespace dpumesh::gateway
