// SPDX-License-Identifier: BSD-3-Clause
// lib/json: positions of values and keys, strict object readers, error text.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "dpumesh/json/json.h"

using namespace dpumesh;

namespace {

json::document parse(std::string_view text)
{
	auto d = json::document::parse(text, "t.json");
	EXPECT_TRUE(d) << (d ? "" : d.error().message());
	return std::move(d).value();
}

} // namespace

TEST(Json, PositionsOfValuesAndKeys)
{
	json::document d = parse("{\n  \"a\": [1, {\"b~/c\": true}],\n  \"s\": \"x\"\n}");
	const json::located &l = d.positions();
	EXPECT_EQ(l.values.at("").line, 1u);
	EXPECT_EQ(l.values.at("/a").line, 2u);
	EXPECT_EQ(l.values.at("/a").column, 8u);
	EXPECT_EQ(l.values.at("/a/1/b~0~1c").column, 21u);
	EXPECT_EQ(l.keys.at("/s").line, 3u);
	EXPECT_EQ(l.keys.at("/s").column, 3u);
}

TEST(Json, SyntaxAndDuplicateKeys)
{
	auto bad = json::document::parse("{\"a\": 1,}", "t.json");
	ASSERT_FALSE(bad);
	EXPECT_EQ(bad.error().message().rfind("t.json:1:", 0), 0u) << bad.error().message();
	auto dup = json::document::parse("{\"a\": 1, \"a\": 2}", "t.json");
	ASSERT_FALSE(dup);
	EXPECT_NE(dup.error().message().find("duplicate"), std::string::npos)
		<< dup.error().message();
}

TEST(Json, ReaderErrorsNamePositionAndPointer)
{
	json::document d = parse("{\n \"n\": 99,\n \"name\": \"\",\n \"flag\": 1\n}");
	{
		json::reader r(d);
		json::object_reader o(r, d.root(), "");
		uint32_t n = 0;
		EXPECT_FALSE(o.uint("n", n, 1, 64));
		ASSERT_TRUE(r.failed());
		EXPECT_EQ(r.error()->message(), "t.json:2:7: /n: 99 is out of range [1, 64]");
	}
	{
		json::reader r(d);
		json::object_reader o(r, d.root(), "");
		std::string s;
		EXPECT_FALSE(o.str("name", s));
		EXPECT_EQ(r.error()->message(), "t.json:3:10: /name: length 0 is out of range [1, 255]");
	}
	{
		json::reader r(d);
		json::object_reader o(r, d.root(), "");
		bool b = false;
		EXPECT_FALSE(o.boolean("flag", b));
		EXPECT_EQ(r.error()->message(),
			  "t.json:4:10: /flag: expected a boolean, got an integer");
	}
	{ /* the first error wins: later failures add nothing */
		json::reader r(d);
		json::object_reader o(r, d.root(), "");
		std::string s;
		o.str("missing", s, true);
		uint32_t n = 0;
		o.uint("n", n, 1, 64);
		EXPECT_EQ(r.error()->message(), "t.json:1:1: /: missing required key \"missing\"");
	}
}

TEST(Json, UnknownKeyAtItsKeyWithHint)
{
	json::document d = parse("{\"count\": 1,\n  \"cuont\": 2}");
	json::reader r(d);
	json::object_reader o(r, d.root(), "");
	uint32_t n = 0;
	EXPECT_TRUE(o.uint("count", n, 0, 9));
	o.done();
	ASSERT_TRUE(r.failed());
	EXPECT_EQ(r.error()->message(),
		  "t.json:2:3: /cuont: unknown key \"cuont\" (did you mean \"count\"?)");
}

TEST(Json, ArraysAndNotAnObject)
{
	json::document d = parse("{\"a\": [1,2,3], \"o\": 5}");
	json::reader r(d);
	json::object_reader o(r, d.root(), "");
	EXPECT_EQ(o.array("a", false, 2), nullptr);
	EXPECT_EQ(r.error()->message(), "t.json:1:7: /a: too many items (3, at most 2)");
	json::reader r2(d);
	json::object_reader inner(r2, json_object_get(d.root(), "o"), "/o");
	EXPECT_FALSE(inner.valid());
	EXPECT_EQ(r2.error()->message(), "t.json:1:21: /o: expected an object, got an integer");
}

TEST(Json, Files)
{
	auto missing = json::document::load_file("/nonexistent/x.json");
	ASSERT_FALSE(missing);
	EXPECT_NE(missing.error().message().find("/nonexistent/x.json: cannot open"),
		  std::string::npos);
	std::string path = testing::TempDir() + "json_test_big.json";
	{
		std::ofstream f(path);
		f << "[" << std::string(100, ' ') << "]";
	}
	auto big = json::document::load_file(path, 64);
	ASSERT_FALSE(big);
	EXPECT_NE(big.error().message().find("larger than 64 bytes"), std::string::npos);
	auto ok = json::document::load_file(path, 1024);
	ASSERT_TRUE(ok) << ok.error().message();
	EXPECT_TRUE(json_is_array(ok->root()));
	auto exact = json::document::load_file(path, 102); /* "[", 100 blanks, "]" */
	EXPECT_TRUE(exact) << exact.error().message();
	EXPECT_FALSE(json::document::load_file(path, 101));
	std::remove(path.c_str());
	/* a file without end is refused once it passes the limit, not read (and held)
	 * forever; a directory is named as one */
	auto endless = json::document::load_file("/dev/zero", 1u << 20);
	ASSERT_FALSE(endless);
	EXPECT_EQ(endless.error().message(), "/dev/zero: file is larger than 1048576 bytes");
	auto dir = json::document::load_file("/");
	ASSERT_FALSE(dir);
	EXPECT_EQ(dir.error().message(), "/: cannot read: Is a directory");
}

TEST(Json, PointerEscapes)
{
	EXPECT_EQ(json::pointer_append("/a", "b/c~d"), "/a/b~1c~0d");
	EXPECT_EQ(json::pointer_append("/a", size_t{7}), "/a/7");
}

TEST(Json, PointerTokensUnescapeAndRefuseBadEscapes)
{
	using tokens = std::vector<std::string>;
	auto toks = [](std::string_view p) -> tokens {
		auto r = json::pointer_tokens(p);
		return r ? *r : tokens{"error: " + r.error().message()};
	};
	EXPECT_EQ(toks(""), tokens{});
	EXPECT_EQ(toks("/"), tokens{""});
	EXPECT_EQ(toks("/a//b/"), (tokens{"a", "", "b", ""}));
	EXPECT_EQ(toks("/a~1b/m~0n"), (tokens{"a/b", "m~n"}));
	/* "~01" is '~' then '1', not '/'; "~00" is "~0", not "~" (one pass, left to right) */
	EXPECT_EQ(toks("/~01/~00/~0~1"), (tokens{"~1", "~0", "~/"}));
	for (const char *bad : {"a", "a/b", "/~", "/x~", "/~2", "/a~/b", "/~~01"}) {
		auto r = json::pointer_tokens(bad);
		ASSERT_FALSE(r) << bad;
		EXPECT_NE(r.error().message().find(bad), std::string::npos) << r.error().message();
	}
	/* the inverse of pointer_append */
	for (const char *t : {"", "plain", "a/b", "~", "~1", "/~0/", "x~y/z"})
		EXPECT_EQ(toks(json::pointer_append("", t)), tokens{t}) << t;
}

TEST(Json, PointerIndexIsAnRfc6901ArrayIndexInRange)
{
	EXPECT_EQ(json::pointer_index("0", 1), 0u);
	EXPECT_EQ(json::pointer_index("9", 10), 9u);
	EXPECT_EQ(json::pointer_index("10", 11), 10u);
	EXPECT_EQ(json::pointer_index("18446744073709551614", SIZE_MAX), SIZE_MAX - 1);
	for (const char *bad : {"", "-", "01", "00", "+1", "-1", " 1", "1 ", "1a", "0x1", "1e2",
				"99999999999999999999", "18446744073709551616"})
		EXPECT_FALSE(json::pointer_index(bad, SIZE_MAX)) << bad;
	EXPECT_FALSE(json::pointer_index("0", 0));
	EXPECT_FALSE(json::pointer_index("3", 3));
}
