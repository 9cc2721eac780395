// SPDX-License-Identifier: BSD-3-Clause
// Routing and policy changes at run time: one edit of the config's JSON, validated by the
// same loader as at start, published to the sidecar as one new version.
#include <jansson.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "dpumesh/control/control.h"
#include "dpumesh/common/log.h"
#include "dpumesh/common/numbers.h"
#include "dpumesh/json/json.h"

namespace dpumesh::control {

namespace {

struct json_deleter {
	void operator()(json_t *j) const noexcept { json_decref(j); }
};
using json_ptr = std::unique_ptr<json_t, json_deleter>;

/* A decimal in [lo, hi], or an error naming the argument. */
result<uint32_t> parse_uint(std::string_view what, std::string_view text, uint32_t lo, uint32_t hi)
{
	const std::string t(text);
	const auto v = parse_whole(t.c_str(), lo, hi);
	if (!v)
		return errorf("Bad arguments: %.*s must be an integer in [%u, %u], not \"%s\"",
			      static_cast<int>(what.size()), what.data(), lo, hi, t.c_str());
	return static_cast<uint32_t>(*v);
}

json_t *member_array(json_t *obj, const char *name)
{
	json_t *a = json_object_get(obj, name);
	if (!a) {
		a = json_array();
		json_object_set_new(obj, name, a);
	}
	return json_is_array(a) ? a : nullptr;
}

bool str_is(const json_t *obj, const char *key, std::string_view want, const char *dflt)
{
	const json_t *v = json_object_get(obj, key);
	const char *s = v ? json_string_value(v) : dflt;
	return s && want == s;
}

/**
 * Applies `edit` to a copy of the running config's JSON, loads the result with the config
 * loader (every range and reference checked as at start), and publishes it. Nothing
 * changes unless all of that succeeds.
 */
template <typename Edit>
result<edit_report> edit_config(node &n, const char *command, std::string what, Edit &&edit)
{
	auto cur = n.config();
	json_error_t jerr;
	json_ptr root(json_loadb(cur->text.data(), cur->text.size(), 0, &jerr));
	if (!root || !json_is_object(root.get()))
		return errorf("%s: the running config's text cannot be edited", command);
	json_t *policy = json_object_get(root.get(), "policy");
	if (!policy) {
		policy = json_object();
		json_object_set_new(root.get(), "policy", policy);
	}
	if (!json_is_object(policy))
		return errorf("%s: /policy is not an object", command);
	DPUMESH_RETURN_IF_ERROR(edit(root.get(), policy));
	std::unique_ptr<char, decltype(&std::free)> text(
		json_dumps(root.get(), JSON_INDENT(2) | JSON_PRESERVE_ORDER), &std::free);
	if (!text)
		return errorf("%s: out of memory", command);
	auto fresh = config::load_string(text.get(), command);
	if (!fresh) {
		/* the line and column are the edited text's: keep the JSON pointer and the why */
		std::string msg = fresh.error().message();
		if (size_t at = msg.find(": /"); at != std::string::npos)
			msg = msg.substr(at + 2);
		return errorf("%s: refused (nothing changed): %s", command, msg.c_str());
	}
	fresh->source = cur->source;
	if (n.adjust())
		n.adjust()(*fresh);
	DPUMESH_RETURN_IF_ERROR(apply_config(n, std::move(*fresh)).with_context(
		std::string(command) + ": refused (nothing changed)"));
	edit_report rep;
	rep.what = std::move(what);
	rep.version = n.sidecar() ? n.sidecar()->policy()->version() : 0;
	DPUMESH_LOG(INFO, config, "%s: %s (policy version %lu)", command, rep.what.c_str(),
		    static_cast<unsigned long>(rep.version));
	return rep;
}

} // namespace

status apply_config(node &n, config::node_config cfg)
{
	if (sidecar::stage *sc = n.sidecar()) {
		if (!n.registry())
			return errorf("no pod registry in this node");
		auto cur = sc->policy();
		/* one version per shard, built before any is published (all or none) */
		std::vector<std::unique_ptr<sidecar::ruleset>> next;
		for (size_t i = 0; i < n.shards().size(); i++) {
			auto v = sidecar::ruleset::build(cfg, *n.registry(),
							 cur ? cur->version() + 1 : 1,
							 next.empty() ? nullptr : next.front().get());
			if (!v)
				return v.error();
			next.push_back(std::move(*v));
		}
		std::vector<sidecar::stage *> shards = n.shards();
		for (size_t i = 0; i < shards.size(); i++)
			shards[i]->apply(std::move(next[i]));
	}
	n.replace_config(std::make_shared<const config::node_config>(std::move(cfg)));
	return status::ok();
}

result<edit_report> set_route(node &n, std::string_view service, std::string_view to)
{
	std::string what = "route " + std::string(service) + " -> " + std::string(to);
	return edit_config(n, "set route", what, [&](json_t *root, json_t *) -> status {
		json_t *routes = member_array(root, "routes");
		if (!routes)
			return errorf("set route: /routes is not an array");
		size_t i;
		json_t *r;
		json_array_foreach(routes, i, r)
		{
			if (str_is(r, "service", service, nullptr)) {
				json_object_set_new(r, "to", json_stringn(to.data(), to.size()));
				return status::ok();
			}
		}
		json_array_append_new(routes, json_pack("{s:s%,s:s%}", "service", service.data(),
							service.size(), "to", to.data(), to.size()));
		return status::ok();
	});
}

result<edit_report> set_ratelimit(node &n, std::string_view service, std::string_view prefix,
				  std::string_view key, std::string_view rate_s,
				  std::string_view burst_s)
{
	DPUMESH_ASSIGN_OR_RETURN(uint32_t rate, parse_uint("<rate>", rate_s, 0, UINT32_MAX));
	DPUMESH_ASSIGN_OR_RETURN(uint32_t burst, parse_uint("<burst>", burst_s, 0, UINT32_MAX));
	std::string what = "ratelimit " + std::string(service) + " " + std::string(prefix) +
			   " key=" + std::string(key) +
			   (rate ? " rate=" + std::to_string(rate) + "/s burst=" + std::to_string(burst)
				 : " removed");
	return edit_config(n, "set ratelimit", what, [&](json_t *, json_t *policy) -> status {
		json_t *limits = member_array(policy, "rate_limits");
		if (!limits)
			return errorf("set ratelimit: /policy/rate_limits is not an array");
		size_t i;
		json_t *l;
		json_array_foreach(limits, i, l)
		{
			if (str_is(l, "service", service, nullptr) &&
			    str_is(l, "path_prefix", prefix, "/") && str_is(l, "key", key, "source")) {
				if (rate == 0)
					json_array_remove(limits, i);
				else {
					json_object_set_new(l, "rate", json_integer(rate));
					json_object_set_new(l, "burst", json_integer(burst));
				}
				return status::ok();
			}
		}
		if (rate == 0)
			return errorf("Bad arguments: no rate limit for service %.*s, path_prefix %.*s, "
				      "key %.*s to remove",
				      static_cast<int>(service.size()), service.data(),
				      static_cast<int>(prefix.size()), prefix.data(),
				      static_cast<int>(key.size()), key.data());
		json_array_append_new(limits,
				      json_pack("{s:s%,s:s%,s:s%,s:I,s:I}", "service", service.data(),
						service.size(), "path_prefix", prefix.data(), prefix.size(),
						"key", key.data(), key.size(), "rate", json_int_t(rate),
						"burst", json_int_t(burst)));
		return status::ok();
	});
}

result<edit_report> set_timeout(node &n, std::string_view service, std::string_view prefix,
				std::string_view timeout_s, std::string_view retries_s)
{
	DPUMESH_ASSIGN_OR_RETURN(uint32_t timeout_ms,
				 parse_uint("<timeout_ms>", timeout_s, 0, UINT32_MAX));
	DPUMESH_ASSIGN_OR_RETURN(uint32_t retries, parse_uint("<retries>", retries_s, 0, UINT32_MAX));
	std::string what = "timeout " + std::string(service) + " " + std::string(prefix) +
			   (timeout_ms ? " timeout_ms=" + std::to_string(timeout_ms) +
					 " retries=" + std::to_string(retries)
				       : " removed");
	return edit_config(n, "set timeout", what, [&](json_t *, json_t *policy) -> status {
		json_t *ts = member_array(policy, "timeouts");
		if (!ts)
			return errorf("set timeout: /policy/timeouts is not an array");
		size_t i;
		json_t *t;
		json_array_foreach(ts, i, t)
		{
			if (str_is(t, "service", service, nullptr) && str_is(t, "path_prefix", prefix, "/")) {
				if (timeout_ms == 0)
					json_array_remove(ts, i);
				else {
					json_object_set_new(t, "timeout_ms", json_integer(timeout_ms));
					json_object_set_new(t, "retries", json_integer(retries));
				}
				return status::ok();
			}
		}
		if (timeout_ms == 0)
			return errorf("Bad arguments: no timeout for service %.*s, path_prefix %.*s to "
				      "remove",
				      static_cast<int>(service.size()), service.data(),
				      static_cast<int>(prefix.size()), prefix.data());
		json_array_append_new(ts, json_pack("{s:s%,s:s%,s:I,s:I}", "service", service.data(),
						    service.size(), "path_prefix", prefix.data(),
						    prefix.size(), "timeout_ms", json_int_t(timeout_ms),
						    "retries", json_int_t(retries)));
		return status::ok();
	});
}

result<edit_report> set_policy(node &n, std::string_view pointer, std::string_view value_text)
{
	const std::string ptr(pointer);
	if (ptr.rfind("/policy/", 0) != 0 || ptr.size() <= 8)
		return errorf("Bad arguments: <pointer> must name a value under /policy (e.g. "
			      "/policy/rate_limits/0/rate), not \"%s\"",
			      ptr.c_str());
	json_error_t jerr;
	json_ptr value(json_loadb(value_text.data(), value_text.size(), JSON_DECODE_ANY, &jerr));
	if (!value)
		return errorf("Bad arguments: <json> is not a JSON value: %s (column %d)", jerr.text,
			      jerr.column);
	std::string what = ptr + " = " + std::string(value_text);
	return edit_config(n, "set policy", what, [&](json_t *, json_t *policy) -> status {
		/* the pointer's tokens below /policy, unescaped (RFC 6901) */
		auto parsed = json::pointer_tokens(ptr);
		if (!parsed)
			return parsed.error().with_context("set policy");
		const std::vector<std::string> tokens(parsed->begin() + 1, parsed->end());
		json_t *at = policy;
		for (size_t i = 0; i + 1 < tokens.size(); i++) {
			json_t *next = nullptr;
			if (json_is_object(at)) {
				next = json_object_get(at, tokens[i].c_str());
			} else if (json_is_array(at)) {
				if (const auto k = json::pointer_index(tokens[i], json_array_size(at)))
					next = json_array_get(at, *k);
			}
			if (!next && json_is_object(at) && i + 2 == tokens.size() && tokens.back() == "-") {
				/* "/policy/rbac/-" with no rbac yet: the array is made */
				next = json_array();
				json_object_set_new(at, tokens[i].c_str(), next);
			}
			if (!next)
				return errorf("set policy: %s: no value at token \"%s\"", ptr.c_str(),
					      tokens[i].c_str());
			at = next;
		}
		const std::string &last = tokens.back();
		const bool remove = json_is_null(value.get());
		if (json_is_object(at)) {
			if (remove) {
				if (json_object_del(at, last.c_str()) != 0)
					return errorf("set policy: %s: nothing to remove", ptr.c_str());
			} else {
				json_object_set(at, last.c_str(), value.get());
			}
			return status::ok();
		}
		if (!json_is_array(at))
			return errorf("set policy: %s: the parent is neither an object nor an array",
				      ptr.c_str());
		if (last == "-" && !remove) {
			json_array_append(at, value.get());
			return status::ok();
		}
		const size_t size = json_array_size(at);
		const auto idx = json::pointer_index(last, size);
		if (!idx)
			return errorf("set policy: %s: \"%s\" is not an index of the array (size %zu; "
				      "\"-\" appends)",
				      ptr.c_str(), last.c_str(), size);
		if (remove)
			json_array_remove(at, *idx);
		else
			json_array_set(at, *idx, value.get());
		return status::ok();
	});
}

} // namespace dpumesh::control
