// SPDX-License-Identifier: BSD-3-Clause
// The L7 header codec: round trips, and every malformed form refused with its reason.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dpumesh/wire/l7.h"
#include "l7_reference.h"

using namespace dpumesh::wire;

namespace {

std::vector<uint8_t> make_request()
{
	std::vector<uint8_t> b(512);
	l7_writer w(b.data(), b.size());
	w.request("echo", "POST", "/v1/echo?x=1", 250, l7_flag_idempotent);
	w.field("content-type", "text/plain");
	w.field("x-request-id", "abc-123");
	w.field("empty", "");
	size_t n = w.finish();
	b.resize(n);
	return b;
}

/* Encodes one raw field (name, value) at the end of buf and fixes up the fixed part. */
void append_raw(std::vector<uint8_t> &b, std::string_view name, std::string_view value,
		uint8_t reserved = 0)
{
	b.push_back(static_cast<uint8_t>(name.size()));
	b.push_back(reserved);
	b.push_back(static_cast<uint8_t>(value.size() >> 8));
	b.push_back(static_cast<uint8_t>(value.size()));
	b.insert(b.end(), name.begin(), name.end());
	b.insert(b.end(), value.begin(), value.end());
	uint16_t nb = static_cast<uint16_t>((b[6] << 8 | b[7]) + 1);
	b[6] = static_cast<uint8_t>(nb >> 8);
	b[7] = static_cast<uint8_t>(nb);
	b[4] = static_cast<uint8_t>(b.size() >> 8);
	b[5] = static_cast<uint8_t>(b.size());
}

l7_error decode(const std::vector<uint8_t> &b)
{
	l7_view v;
	return l7_decode(b.data(), b.size(), &v);
}

} // namespace

TEST(L7, RequestRoundTrip)
{
	auto b = make_request();
	ASSERT_FALSE(b.empty());
	l7_view v;
	ASSERT_EQ(l7_decode(b.data(), b.size(), &v), l7_error::ok);
	EXPECT_EQ(v.kind, l7_kind::request);
	EXPECT_EQ(v.service, "echo");
	EXPECT_EQ(v.method, "POST");
	EXPECT_EQ(v.path, "/v1/echo?x=1");
	EXPECT_EQ(v.deadline_ms, 250u);
	EXPECT_EQ(v.flags, l7_flag_idempotent);
	EXPECT_EQ(v.nb_fields, 3u);
	std::string_view val;
	ASSERT_TRUE(v.find("x-request-id", &val));
	EXPECT_EQ(val, "abc-123");
	EXPECT_FALSE(v.find("nope", &val));
	std::vector<std::string> seen;
	v.for_each([&](std::string_view n, std::string_view x) {
		std::string entry(n);
		entry.append("=").append(x);
		seen.push_back(entry);
	});
	EXPECT_EQ(seen, (std::vector<std::string>{"content-type=text/plain", "x-request-id=abc-123",
						   "empty="}));
}

/* The decoder notes the trace fields among the regular fields, and only those names (a
 * near miss, a prefix, an extension, a value that spells one are not). */
TEST(L7, DecodeNotesTheTraceFields)
{
	struct sample {
		std::vector<std::pair<std::string, std::string>> fields;
		uint8_t want;
	};
	const std::vector<sample> samples = {
		{{}, 0},
		{{{"x-request-id", "a"}}, l7_trace_request_id},
		{{{"traceparent", "b"}}, l7_trace_traceparent},
		{{{"a", "x"}, {"traceparent", "b"}, {"x-request-id", "a"}},
		 l7_trace_request_id | l7_trace_traceparent},
		{{{"x-request-id", "a"}, {"x-request-id", "again"}}, l7_trace_request_id},
		{{{"x-request-ix", "a"}, {"traceparenu", "b"}, {"x-request-i", "c"},
		  {"traceparents", "d"}, {"tracestate", "e"}, {"some", "traceparent"}},
		 0},
	};
	for (const sample &x : samples) {
		std::vector<uint8_t> b(512);
		l7_writer w(b.data(), b.size());
		w.request("echo", "GET", "/");
		for (const auto &[n, v] : x.fields)
			w.field(n, v);
		b.resize(w.finish());
		ASSERT_FALSE(b.empty());
		l7_view v;
		ASSERT_EQ(l7_decode(b.data(), b.size(), &v), l7_error::ok);
		EXPECT_EQ(v.trace, x.want) << x.fields.size() << " fields";
	}
	/* a response's fields are noted the same way */
	std::vector<uint8_t> b(256);
	l7_writer w(b.data(), b.size());
	w.response(200);
	w.field("traceparent", "b");
	b.resize(w.finish());
	l7_view v;
	ASSERT_EQ(l7_decode(b.data(), b.size(), &v), l7_error::ok);
	EXPECT_EQ(v.trace, l7_trace_traceparent);
}

/* The decoder notes the first authorization field's value (the JWT check reads it there):
 * none, an empty one, the first of two, after other fields; a near miss is not one. */
TEST(L7, DecodeNotesTheAuthorization)
{
	struct sample {
		std::vector<std::pair<std::string, std::string>> fields;
		int want; /* index of the field noted, -1: none */
	};
	const std::vector<sample> samples = {
		{{}, -1},
		{{{"authorization", "Bearer t"}}, 0},
		{{{"authorization", ""}}, 0},
		{{{"a", "x"}, {"authorization", "one"}, {"authorization", "two"}}, 1},
		{{{"authorizatioN", "x"}}, -2}, /* not a lowercase name: refused */
		{{{"authorizatio", "x"}, {"authorizationx", "y"}, {"xauthorization", "z"}}, -1},
	};
	for (const sample &x : samples) {
		std::vector<uint8_t> b(512);
		l7_writer w(b.data(), b.size());
		w.request("echo", "GET", "/");
		b.resize(w.finish());
		ASSERT_FALSE(b.empty());
		for (const auto &[n, v] : x.fields) /* as they are: the writer refuses a bad name */
			append_raw(b, n, v);
		l7_view v;
		const l7_error e = l7_decode(b.data(), b.size(), &v);
		if (x.want == -2) {
			EXPECT_EQ(e, l7_error::bad_name);
			continue;
		}
		ASSERT_EQ(e, l7_error::ok) << x.fields.size() << " fields";
		if (x.want < 0) {
			EXPECT_EQ(v.authorization.data(), nullptr);
			continue;
		}
		std::string_view first;
		ASSERT_TRUE(v.find("authorization", &first));
		EXPECT_EQ(v.authorization.data(), first.data());
		EXPECT_EQ(v.authorization, x.fields[static_cast<size_t>(x.want)].second);
	}
}

TEST(L7, ResponseWithMeshReason)
{
	uint8_t buf[256];
	l7_writer w(buf, sizeof(buf));
	w.response(503, l7_flag_mesh_generated, "no_live_pod", "node1/sidecar");
	w.field("content-type", "application/json");
	size_t n = w.finish();
	ASSERT_GT(n, 0u);
	l7_view v;
	ASSERT_EQ(l7_decode(buf, n, &v), l7_error::ok);
	EXPECT_EQ(v.kind, l7_kind::response);
	EXPECT_EQ(v.status, 503);
	EXPECT_EQ(v.reason, "no_live_pod");
	EXPECT_EQ(v.hop, "node1/sidecar");
	EXPECT_EQ(v.nb_fields, 1u);
}

TEST(L7, EveryErrorIsDetected)
{
	const auto good = make_request();
	struct {
		l7_error expect;
		std::vector<uint8_t> bytes;
	} cases[] = {
		{l7_error::truncated, std::vector<uint8_t>(good.begin(), good.begin() + 10)},
		{l7_error::truncated, std::vector<uint8_t>(good.begin(), good.end() - 1)},
		{l7_error::bad_magic, [&] { auto b = good; b[0] = 'X'; return b; }()},
		{l7_error::bad_version, [&] { auto b = good; b[2] = 2; return b; }()},
		{l7_error::bad_kind, [&] { auto b = good; b[3] = 7; return b; }()},
		{l7_error::bad_length, [&] { auto b = good; b.push_back(0); return b; }()},
		{l7_error::bad_flags, [&] { auto b = good; b[10] = 0x80; return b; }()},
		{l7_error::too_many_fields, [&] { auto b = good; b[6] = 0xff; return b; }()},
		{l7_error::bad_field, [&] { auto b = good; b[7]++; return b; }()},
		{l7_error::bad_field, [&] { auto b = good; append_raw(b, "x", "y", 1); return b; }()},
		{l7_error::bad_name, [&] { auto b = good; append_raw(b, "Upper", "v"); return b; }()},
		{l7_error::bad_name, [&] { auto b = good; append_raw(b, "sp ace", "v"); return b; }()},
		{l7_error::bad_value, [&] { auto b = good; append_raw(b, "x", "a\r\nb"); return b; }()},
		{l7_error::bad_value,
		 [&] { auto b = good; append_raw(b, "x", std::string("a\0b", 3)); return b; }()},
		{l7_error::pseudo_after_field,
		 [&] { auto b = good; append_raw(b, ":path", "/x"); return b; }()},
		{l7_error::bad_status, [&] { auto b = good; b[9] = 200; return b; }()},
		{l7_error::bad_path, [] {
			 std::vector<uint8_t> b = {'D', 'M', 1, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
			 append_raw(b, ":service", "s");
			 append_raw(b, ":method", "GET");
			 append_raw(b, ":path", "x");
			 return b;
		 }()},
		{l7_error::bad_method, [] {
			 std::vector<uint8_t> b = {'D', 'M', 1, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
			 append_raw(b, ":service", "s");
			 append_raw(b, ":method", "G T");
			 append_raw(b, ":path", "/");
			 return b;
		 }()},
		{l7_error::missing_pseudo, [] {
			 std::vector<uint8_t> b = {'D', 'M', 1, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
			 append_raw(b, ":service", "s");
			 append_raw(b, ":path", "/");
			 return b;
		 }()},
		{l7_error::missing_pseudo, [] {
			 std::vector<uint8_t> b = {'D', 'M', 1, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
			 append_raw(b, ":service", "");
			 append_raw(b, ":method", "GET");
			 append_raw(b, ":path", "/");
			 return b;
		 }()},
		{l7_error::duplicate_pseudo, [] {
			 std::vector<uint8_t> b = {'D', 'M', 1, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
			 append_raw(b, ":service", "s");
			 append_raw(b, ":service", "t");
			 return b;
		 }()},
		{l7_error::unknown_pseudo, [] {
			 std::vector<uint8_t> b = {'D', 'M', 1, 2, 0, 16, 0, 0, 0, 200, 0, 0, 0, 0, 0, 0};
			 append_raw(b, ":path", "/"); /* requests only */
			 return b;
		 }()},
		{l7_error::bad_status, [] {
			 return std::vector<uint8_t>{'D', 'M', 1, 2, 0, 16, 0, 0, 0x02, 0x58, 0, 0, 0, 0, 0, 0};
		 }()},
		{l7_error::bad_deadline, [] { /* found by l7_fuzz */
			 return std::vector<uint8_t>{'D', 'M', 1, 2, 0, 16, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x7d};
		 }()},
	};
	bool covered[static_cast<size_t>(l7_error::count)] = {};
	covered[0] = true;
	for (auto &c : cases) {
		EXPECT_EQ(decode(c.bytes), c.expect) << l7_error_name(c.expect);
		covered[static_cast<size_t>(c.expect)] = true;
	}
	for (size_t i = 0; i < static_cast<size_t>(l7_error::count); i++)
		EXPECT_TRUE(covered[i]) << "no case for " << l7_error_name(static_cast<l7_error>(i));
}

TEST(L7, WriterRefusesWhatTheDecoderWould)
{
	uint8_t buf[64];
	{
		l7_writer w(buf, sizeof(buf));
		w.request("svc", "GET", "/");
		w.field("x", std::string(100, 'a')); /* no room */
		EXPECT_EQ(w.finish(), 0u);
	}
	{
		l7_writer w(buf, sizeof(buf));
		w.request("svc", "GET", "/");
		w.field("Bad", "v");
		EXPECT_EQ(w.finish(), 0u);
	}
	{
		l7_writer w(buf, sizeof(buf));
		w.request("svc", "GET", "/");
		w.field("x", "a\nb");
		EXPECT_EQ(w.finish(), 0u);
	}
	{
		l7_writer w(buf, sizeof(buf));
		w.request("svc", "GET", "no-slash");
		EXPECT_EQ(w.finish(), 0u);
	}
	{
		l7_writer w(buf, sizeof(buf));
		w.response(99);
		EXPECT_EQ(w.finish(), 0u);
	}
	{
		uint8_t small[8];
		l7_writer w(small, sizeof(small));
		w.response(200);
		EXPECT_EQ(w.finish(), 0u);
	}
}

TEST(L7, LargestHeaderFits)
{
	std::vector<uint8_t> b(l7_max_size + 100);
	l7_writer w(b.data(), b.size());
	w.request("s", "GET", "/");
	for (int i = 0; i < 3; i++)
		w.field(i == 0 ? "v0" : i == 1 ? "v1" : "v2", std::string(l7_max_value, 'x'));
	size_t n = w.finish();
	ASSERT_GT(n, 3 * l7_max_value);
	l7_view v;
	EXPECT_EQ(l7_decode(b.data(), n, &v), l7_error::ok);
	w = l7_writer(b.data(), b.size());
	w.request("s", "GET", "/");
	w.field("big", std::string(l7_max_value + 1, 'x'));
	EXPECT_EQ(w.finish(), 0u);
}

/* The value check reads eight bytes a step: NUL, CR and LF are refused at every position of
 * values of every length around the word size, and every other byte (including 0x0b, 0x0c,
 * 0x0e, 0x8d, 0xff, which differ from them in one bit) is taken. */
TEST(L7, ValueCheckAtEveryPositionAndLength)
{
	const auto good = make_request();
	for (size_t len = 1; len <= 70; len++) { /* past a few 16-byte steps */
		for (size_t pos = 0; pos < len; pos++) {
			for (char bad : {'\0', '\r', '\n'}) {
				std::string v(len, 'v');
				v[pos] = bad;
				auto b = good;
				append_raw(b, "x", v);
				EXPECT_EQ(decode(b), l7_error::bad_value) << len << " " << pos << " " << int(bad);
			}
			for (unsigned ok : {0x01u, 0x09u, 0x0bu, 0x0cu, 0x0eu, 0x1du, 0x8du, 0x8au, 0xffu}) {
				std::string v(len, 'v');
				v[pos] = static_cast<char>(ok);
				auto b = good;
				append_raw(b, "x", v);
				EXPECT_EQ(decode(b), l7_error::ok) << len << " " << pos << " " << ok;
			}
		}
	}
	std::vector<uint8_t> buf(256);
	l7_writer w(buf.data(), buf.size());
	w.request("echo", "GET", "/", 0, 0);
	w.field("x", std::string_view("0123456789abcdef\n", 17));
	EXPECT_EQ(w.finish(), 0u); /* the writer refuses it too */
}

/* Port RX's look at a request's service (l7_peek_service): the decoder's service when the
 * decoder accepts it; a reason, never a read past the buffer, when the header is cut. */
TEST(L7, PeekServiceFindsTheDecodersServiceAndStaysInBounds)
{
	std::vector<uint8_t> b = make_request();
	std::string_view svc;
	ASSERT_EQ(l7_peek_service(b.data(), b.size(), &svc), l7_error::ok);
	EXPECT_EQ(svc, "echo");

	/* :service after :method and :path: still found */
	std::vector<uint8_t> r(l7_fixed_size);
	r[0] = l7_magic0, r[1] = l7_magic1, r[2] = l7_version,
	r[3] = static_cast<uint8_t>(l7_kind::request);
	append_raw(r, ":method", "GET");
	append_raw(r, ":path", "/");
	append_raw(r, ":service", "quiet");
	l7_view v;
	ASSERT_EQ(l7_decode(r.data(), r.size(), &v), l7_error::ok);
	ASSERT_EQ(l7_peek_service(r.data(), r.size(), &svc), l7_error::ok);
	EXPECT_EQ(svc, v.service);

	/* every cut of a valid header is refused (the declared length no longer matches),
	 * each in a buffer of exactly that size so ASan sees any read past it */
	for (size_t n = 0; n < b.size(); n++) {
		std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<long>(n));
		EXPECT_NE(l7_peek_service(cut.data(), cut.size(), &svc), l7_error::ok) << n;
	}
	/* a field that claims more than there is */
	std::vector<uint8_t> bad = r;
	bad[l7_fixed_size + 3] = 0xff; /* :method's value length */
	EXPECT_EQ(l7_peek_service(bad.data(), bad.size(), &svc), l7_error::bad_field);
	/* a response, and a request without :service before its regular fields */
	std::vector<uint8_t> resp(512);
	l7_writer w(resp.data(), resp.size());
	w.response(200);
	resp.resize(w.finish());
	EXPECT_EQ(l7_peek_service(resp.data(), resp.size(), &svc), l7_error::bad_kind);
	std::vector<uint8_t> nosvc(r.begin(), r.begin() + l7_fixed_size);
	nosvc[6] = nosvc[7] = 0;
	append_raw(nosvc, ":method", "GET");
	append_raw(nosvc, "x-a", "1");
	append_raw(nosvc, ":service", "late");
	EXPECT_EQ(l7_peek_service(nosvc.data(), nosvc.size(), &svc), l7_error::missing_pseudo);
	/* an empty service name */
	std::vector<uint8_t> empty(r.begin(), r.begin() + l7_fixed_size);
	empty[6] = empty[7] = 0;
	append_raw(empty, ":service", "");
	EXPECT_EQ(l7_peek_service(empty.data(), empty.size(), &svc), l7_error::missing_pseudo);
}

/* mesh_field() (values the mesh formats itself, in place) skips the character check only:
 * it makes the bytes field() makes, and refuses what does not fit, too long a value, too
 * many fields and a writer that was never started, as field() does. */
TEST(L7, MeshFieldWritesWhatFieldWritesAndKeepsEveryBound)
{
	const std::string_view id = "0af7651916cd43dd8448eb211c80319c";
	const auto mesh = []<size_t N>(l7_writer &w, const char(&name)[N], std::string_view value) {
		char *p = w.mesh_field(name, static_cast<uint16_t>(value.size()));
		if (p)
			std::memcpy(p, value.data(), value.size());
		return p != nullptr;
	};
	std::vector<uint8_t> a(256), b(256);
	l7_writer wa(a.data(), a.size()), wb(b.data(), b.size());
	wa.request("svc", "GET", "/p");
	wb.request("svc", "GET", "/p");
	wa.field("x-request-id", id);
	EXPECT_TRUE(mesh(wb, "x-request-id", id));
	const size_t na = wa.finish();
	ASSERT_GT(na, 0u);
	ASSERT_EQ(wb.finish(), na);
	EXPECT_EQ(std::memcmp(a.data(), b.data(), na), 0);
	l7_view v;
	ASSERT_EQ(l7_decode(b.data(), na, &v), l7_error::ok);
	std::string_view got;
	ASSERT_TRUE(v.find("x-request-id", &got));
	EXPECT_EQ(got, id);

	/* extend() a decoded header, as the sidecar does */
	l7_writer we = l7_writer::extend(b.data(), na, b.size());
	EXPECT_TRUE(mesh(we, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
	const size_t ne = we.finish();
	ASSERT_GT(ne, na);
	ASSERT_EQ(l7_decode(b.data(), ne, &v), l7_error::ok);
	EXPECT_EQ(v.nb_fields, 2u);

	uint8_t buf[64];
	{ /* no room */
		l7_writer w(buf, sizeof(buf));
		w.request("svc", "GET", "/");
		EXPECT_EQ(w.mesh_field("x", 100), nullptr);
		EXPECT_EQ(w.finish(), 0u);
	}
	{ /* never started */
		l7_writer w(buf, sizeof(buf));
		EXPECT_EQ(w.mesh_field("x", 1), nullptr);
		EXPECT_EQ(w.finish(), 0u);
	}
	{ /* a failed writer stays failed */
		l7_writer w(buf, sizeof(buf));
		w.request("svc", "GET", "/");
		w.field("x", "a\nb");
		EXPECT_EQ(w.mesh_field("y", 1), nullptr);
		EXPECT_EQ(w.finish(), 0u);
	}
	{ /* a value over l7_max_value, with room for it */
		std::vector<uint8_t> big(l7_max_size + 100);
		l7_writer w(big.data(), big.size());
		w.request("s", "GET", "/");
		EXPECT_EQ(w.mesh_field("big", l7_max_value + 1), nullptr);
		EXPECT_EQ(w.finish(), 0u);
	}
	{ /* one field too many */
		std::vector<uint8_t> many(l7_max_size);
		l7_writer w(many.data(), many.size());
		w.request("s", "GET", "/");
		for (unsigned i = 3; i < l7_max_fields; i++)
			EXPECT_TRUE(mesh(w, "f", ""));
		ASSERT_GT(w.finish(), 0u);
		EXPECT_EQ(w.mesh_field("f", 0), nullptr);
		EXPECT_EQ(w.finish(), 0u);
	}
}

namespace {

/* The headers the differential tests start from: the writer's request (the decoder's fast
 * form: :service, :method, :path first), the forward suite's leanest one, requests with
 * their pseudo-fields in another order, responses with and without :reason and :hop. */
std::vector<std::vector<uint8_t>> seed_headers()
{
	std::vector<std::vector<uint8_t>> out;
	out.push_back(make_request());
	const auto fixed = [](uint8_t kind, uint8_t status_lo) {
		std::vector<uint8_t> b = {'D', 'M', 1, kind, 0, 16, 0, 0, 0, status_lo, 0, 0, 0, 0, 0, 0};
		if (status_lo)
			b[8] = 0;
		return b;
	};
	{
		std::vector<uint8_t> b(256);
		l7_writer w(b.data(), b.size());
		w.request("echo", "POST", "/", 1000);
		b.resize(w.finish());
		out.push_back(b);
	}
	{
		/* the writer's form with the fields the decoder notes by name, a near miss of
		 * each and a second authorization (the first one is noted) */
		std::vector<uint8_t> b(512);
		l7_writer w(b.data(), b.size());
		w.request("echo", "GET", "/jwt");
		w.field("authorizatiom", "x");
		w.field("authorization", "Bearer a.b.c");
		w.field("x-request-ie", "1");
		w.field("traceparens", "2");
		w.field("authorization", "second");
		b.resize(w.finish());
		out.push_back(b);
	}
	{
		auto b = fixed(1, 0);
		append_raw(b, ":path", "/a/b?c=d");
		append_raw(b, ":service", "a-longer-service-name");
		append_raw(b, ":method", "DELETE");
		append_raw(b, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
		append_raw(b, "x-request-id", "r");
		out.push_back(b);
	}
	{
		auto b = fixed(1, 0);
		append_raw(b, ":service", "s");
		append_raw(b, ":method", "m-x");
		append_raw(b, ":path", "/");
		append_raw(b, "k", "");
		out.push_back(b);
	}
	{
		auto b = fixed(2, 200);
		append_raw(b, ":reason", "upstream_timeout");
		append_raw(b, ":hop", "node-b");
		append_raw(b, "content-type", "text/plain");
		out.push_back(b);
	}
	{
		auto b = fixed(2, 200);
		append_raw(b, "x", "1");
		out.push_back(b);
	}
	return out;
}

/* l7_decode() against the reference on one input: the same error, and on ok the same view */
void expect_as_reference(const std::vector<uint8_t> &in, const char *what, size_t i)
{
	std::vector<uint8_t> b = in; /* exactly its size, so ASan sees a read past it */
	l7_view got, want;
	const l7_error e = l7_decode(b.data(), b.size(), &got);
	const l7_error r = reference::decode(b.data(), b.size(), &want);
	ASSERT_EQ(l7_error_name(e), std::string(l7_error_name(r))) << what << " " << i;
	if (e == l7_error::ok) {
		ASSERT_TRUE(reference::same_view(got, want)) << what << " " << i;
	}
}

} // namespace

/* The decoder reads words where the reference reads bytes: every seed, every cut of it, and
 * random changes (bytes set to values the checks look for, lengths changed, fields cut)
 * decode to the reference's error, and to its view where both accept. */
TEST(L7, DecodesAsTheReferenceDoes)
{
	const auto seeds = seed_headers();
	for (size_t s = 0; s < seeds.size(); s++) {
		l7_view v;
		ASSERT_EQ(reference::decode(seeds[s].data(), seeds[s].size(), &v), l7_error::ok) << s;
		expect_as_reference(seeds[s], "seed", s);
		for (size_t n = 0; n < seeds[s].size(); n++)
			expect_as_reference(std::vector<uint8_t>(seeds[s].begin(), seeds[s].begin() +
									     static_cast<long>(n)),
					    "cut", s * 1000 + n);
	}
	std::mt19937 rng(12);
	const uint8_t interesting[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 13, 14, 16, ':', '/', 'A',
				       'Z', '[', '@', 'a', 'h', 'e', 's', 0x7f, 0x80, 0xff, ' ', '\t'};
	for (size_t i = 0; i < 200000; i++) {
		std::vector<uint8_t> b = seeds[rng() % seeds.size()];
		const unsigned edits = 1 + rng() % 3;
		for (unsigned k = 0; k < edits && !b.empty(); k++) {
			const size_t at = rng() % b.size();
			switch (rng() % 4) {
			case 0: b[at] = interesting[rng() % sizeof(interesting)]; break;
			case 1: b[at] = static_cast<uint8_t>(rng()); break;
			case 2: b[at] = static_cast<uint8_t>(b[at] + (rng() % 2 ? 1 : -1)); break;
			case 3: /* a byte out, the declared length kept in step */
				b.erase(b.begin() + static_cast<long>(at));
				if (b.size() >= 6 && at >= 6) {
					b[4] = static_cast<uint8_t>(b.size() >> 8);
					b[5] = static_cast<uint8_t>(b.size());
				}
				break;
			}
		}
		expect_as_reference(b, "mutant", i);
	}
}

/* The straight line reads a service, method or path value of up to 8 bytes as part of a
 * word that holds the next field's head or its own (bytes below 14 there: lengths, the
 * reserved 0): every such value with a bad byte (NUL, CR, LF), a tab or another byte below
 * 14, or a high byte at each of its places, with the fields after it or not, decodes as the
 * reference does, and as valid_value() says. */
TEST(L7, LineValuesAtEveryPositionAndLength)
{
	const uint8_t odd[] = {0, '\r', '\n', 1, '\t', 13, 14, 0x7f, 0x80, 0xff, 'a'};
	for (unsigned which = 0; which < 3; which++) {
		for (size_t len = 1; len <= 12; len++) {
			for (size_t pos = 0; pos < len; pos++) {
				for (uint8_t c : odd) {
					for (bool more : {false, true}) {
						std::string v(len, which == 1 ? 'G' : 'v');
						if (which == 2)
							v[0] = '/';
						if (which == 2 && pos == 0)
							continue; /* the path's '/' */
						v[pos] = static_cast<char>(c);
						std::vector<uint8_t> b = {'D', 'M', 1, 1, 0, 16, 0, 0,
									  0, 0,   0, 0, 0, 0,  0, 0};
						append_raw(b, ":service", which == 0 ? v : "echo");
						append_raw(b, ":method", which == 1 ? v : "POST");
						append_raw(b, ":path", which == 2 ? v : "/");
						if (more)
							append_raw(b, "x", "1");
						expect_as_reference(b, "line value", which * 10000 + len * 100 + pos);
						if (which == 1)
							continue; /* the method: MethodWordTestAsTheByteLoop */
						const bool bad = c == 0 || c == '\r' || c == '\n';
						EXPECT_EQ(decode(b), bad ? l7_error::bad_value : l7_error::ok)
							<< which << " " << len << " " << pos << " " << int(c);
					}
				}
			}
		}
	}
}

/* The pseudo-fields are told apart by their length and one or two words: every name one
 * byte off, one byte short or long, and each name in the other kind, is an unknown one. */
TEST(L7, PseudoNamesExactlyMatched)
{
	const std::vector<std::string> names = {":service", ":method", ":path", ":reason", ":hop"};
	for (uint8_t kind : {1, 2}) {
		for (const auto &name : names) {
			std::vector<std::string> variants = {name + "x", name.substr(0, name.size() - 1)};
			for (size_t i = 1; i < name.size(); i++)
				for (int d : {-1, 1, 0x20}) {
					std::string n = name;
					n[i] = static_cast<char>(n[i] + d);
					variants.push_back(n);
				}
			variants.push_back(name);
			for (const auto &n : variants) {
				std::vector<uint8_t> b = {'D', 'M', 1, kind, 0, 16, 0, 0,
							  0, static_cast<uint8_t>(kind == 2 ? 200 : 0), 0, 0,
							  0, 0, 0, 0};
				append_raw(b, n, "/v");
				if (kind == 1) { /* the fast form's first field, then the rest */
					std::vector<uint8_t> c = b;
					append_raw(c, ":method", "GET");
					append_raw(c, ":path", "/");
					expect_as_reference(c, n.c_str(), kind);
				}
				expect_as_reference(b, n.c_str(), kind);
				l7_view v;
				const l7_error e = l7_decode(b.data(), b.size(), &v);
				if (n != name) {
					EXPECT_EQ(e, l7_error::unknown_pseudo) << n << " " << int(kind);
				}
			}
		}
	}
}

/* valid_method()'s word test (upper-case letters) and its byte loop agree with the
 * reference on every method of 1-9 bytes made of a few characters around the bounds. */
TEST(L7, MethodWordTestAsTheByteLoop)
{
	const char chars[] = {'A', 'Z', '@', '[', 'a', '-', ' ', '\x7f', '\xc1', '!'};
	std::mt19937 rng(3);
	for (size_t i = 0; i < 20000; i++) {
		std::string m(1 + rng() % 9, 'G');
		for (char &c : m)
			if (rng() % 3 == 0)
				c = chars[rng() % sizeof(chars)];
		std::vector<uint8_t> b = {'D', 'M', 1, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
		append_raw(b, ":service", "s");
		append_raw(b, ":method", m);
		append_raw(b, ":path", "/");
		expect_as_reference(b, m.c_str(), i);
	}
}
