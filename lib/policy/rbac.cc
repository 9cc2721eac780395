// SPDX-License-Identifier: BSD-3-Clause
// RBAC rules: method, path (exact/prefix/glob) and claim matching.
#include "dpumesh/policy/rbac.h"

namespace dpumesh::policy {

namespace {

inline char lower(char c) noexcept
{
	return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

} // namespace

bool glob_match(std::string_view pat, std::string_view s) noexcept
{
	/* Two pointers with one backtrack point: O(|pat| * |s|) worst case, no recursion. */
	size_t p = 0, i = 0;
	size_t star = std::string_view::npos, mark = 0;
	while (i < s.size()) {
		if (p < pat.size() && (pat[p] == '?' || pat[p] == s[i])) {
			p++;
			i++;
		} else if (p < pat.size() && pat[p] == '*') {
			star = p++;
			mark = i;
		} else if (star != std::string_view::npos) {
			p = star + 1;
			i = ++mark;
		} else {
			return false;
		}
	}
	while (p < pat.size() && pat[p] == '*')
		p++;
	return p == pat.size();
}

bool path_is_normal(std::string_view p) noexcept
{
	if (p.empty() || p[0] != '/')
		return false;
	for (size_t i = 0; i < p.size(); i++) {
		char c = p[i];
		if (c == '\\')
			return false;
		if (c == '%' && i + 2 < p.size()) {
			char a = p[i + 1], b = lower(p[i + 2]);
			if ((a == '2' && (b == 'e' || b == 'f')) || (a == '5' && b == 'c'))
				return false;
		}
		if (c != '/')
			continue;
		/* a segment starts at i + 1: refuse "", "." and ".." before the next '/' */
		const size_t n = p.size() - i - 1;
		auto at = [&](size_t k) { return k < n ? p[i + 1 + k] : '/'; };
		if (n > 0 && at(0) == '/')
			return false; /* "//" */
		if (at(0) == '.' && (at(1) == '/' || (at(1) == '.' && at(2) == '/')))
			return false;
	}
	return true;
}

bool rbac_policy::claims_hold(const rule &r, const token_claims *claims) noexcept
{
	if (!claims)
		return false;
	for (const claim_req &c : r.claims)
		if (!claims->contains(c.index, c.value))
			return false;
	return true;
}

result<rbac_policy> rbac_policy::compile(const schema::rbac_policy &cfg, const jwt_verifier *jwt)
{
	rbac_policy p;
	p._default_allow = cfg.default_allow;
	p._require_jwt = cfg.require_jwt;
	for (size_t i = 0; i < cfg.rules.size(); i++) {
		const schema::rbac_rule &cr = cfg.rules[i];
		rule r;
		for (const auto &m : cr.methods) {
			uint16_t b = method_bit(m);
			if (b == 0)
				return errorf("/policy/rbac (service \"%s\")/rules/%zu: unknown method \"%s\"",
					      cfg.service.c_str(), i, m.c_str());
			r.methods |= b;
		}
		p._any_methods |= r.methods != 0;
		r.path = cr.path;
		switch (cr.match) {
		case schema::path_match::exact: r.how = kind::exact; break;
		case schema::path_match::prefix:
			r.how = r.path.empty() || r.path == "/" ? kind::any : kind::prefix;
			break;
		case schema::path_match::glob:
			r.how = r.path == "*" || r.path == "/*" ? kind::any : kind::glob;
			break;
		}
		r.skip = !r.path.empty() && r.path[0] == '/';
		for (const auto &[name, value] : cr.claims) {
			int idx = jwt ? jwt->claim_index(name) : -1;
			if (idx < 0)
				return errorf("/policy/rbac (service \"%s\")/rules/%zu: claim \"%s\" needs "
					      "JWT verification that extracts it (is /policy/jwt set?)",
					      cfg.service.c_str(), i, name.c_str());
			r.claims.push_back({static_cast<unsigned>(idx), value});
		}
		p._rules.push_back(std::move(r));
	}
	return p;
}

} // namespace dpumesh::policy
