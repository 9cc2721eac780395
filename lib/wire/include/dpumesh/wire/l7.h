// SPDX-License-Identifier: BSD-3-Clause
// The mesh L7 header: a compact binary form of an HTTP request or response header.
//
// Pods write it into their TX header buffer, the ingress gateway writes it from HTTP, and
// the Arm sidecar reads it (headers only; bodies are never touched). Layout and rules are
// in docs/wire.md. Decoding is zero-copy (string_views into the buffer), noexcept and
// allocation-free, so the Arm stage can run it per message; every field is validated
// because the bytes come from an untrusted pod or the network.
//
//   uint8_t buf[1024];
//   dpumesh::wire::l7_writer w(buf, sizeof(buf));
//   w.request("echo", "POST", "/v1/echo", 1000);
//   w.field("content-type", "text/plain");
//   size_t n = w.finish();                      // 0 if it did not fit
//   dpumesh::wire::l7_view v;
//   if (dpumesh::wire::l7_decode(buf, n, &v) == dpumesh::wire::l7_error::ok)
//     route(v.service, v.method, v.path);
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace dpumesh::wire {

inline constexpr uint8_t l7_magic0 = 'D';
inline constexpr uint8_t l7_magic1 = 'M';
inline constexpr uint8_t l7_version = 1;
inline constexpr size_t l7_fixed_size = 16;
inline constexpr size_t l7_max_size = 65535;
inline constexpr uint16_t l7_max_fields = 128;
inline constexpr size_t l7_max_value = 16384;
/** Where a header's deadline_ms lies (4 bytes, big-endian). */
inline constexpr size_t l7_deadline_offset = 12;

/** A header's deadline_ms (hdr: at least l7_fixed_size bytes). */
inline uint32_t l7_deadline(const uint8_t *hdr) noexcept
{
	const uint8_t *p = hdr + l7_deadline_offset;
	return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

/** Writes a request header's deadline_ms in place (hdr: a header l7_decode() took as a
 *  request, at least l7_fixed_size bytes): the sidecar gives a pod the time its request has
 *  left as it delivers it. */
inline void l7_set_deadline(uint8_t *hdr, uint32_t ms) noexcept
{
	uint8_t *p = hdr + l7_deadline_offset;
	p[0] = static_cast<uint8_t>(ms >> 24);
	p[1] = static_cast<uint8_t>(ms >> 16);
	p[2] = static_cast<uint8_t>(ms >> 8);
	p[3] = static_cast<uint8_t>(ms);
}

enum class l7_kind : uint8_t { request = 1, response = 2 };

/** Header flags (fixed part, offset 10). */
enum l7_flag : uint16_t {
	l7_flag_mesh_generated = 1u << 0, /**< response made by the mesh, not by a service */
	l7_flag_idempotent = 1u << 1,     /**< request may be retried whatever its method */
	l7_flag_known = l7_flag_mesh_generated | l7_flag_idempotent,
};

/** Why a header was refused; each is a drop counter on the Arm. */
#define DPUMESH_FOREACH_L7_ERROR(_)                                                      \
	_(ok, "valid")                                                                   \
	_(truncated, "shorter than its fixed part or its declared length")               \
	_(bad_magic, "magic is not 'DM'")                                                \
	_(bad_version, "unsupported version")                                            \
	_(bad_kind, "kind is neither request nor response")                              \
	_(bad_length, "declared length differs from the buffer's")                       \
	_(bad_flags, "unknown flag bits set")                                            \
	_(too_many_fields, "more fields than allowed")                                   \
	_(bad_field, "a field runs past the end or has a reserved byte set")             \
	_(bad_name, "a field name is empty or not a lowercase token")                    \
	_(bad_value, "a value is too long or holds CR, LF or NUL")                       \
	_(unknown_pseudo, "an unknown ':' pseudo-field")                                 \
	_(duplicate_pseudo, "a pseudo-field given twice")                                \
	_(pseudo_after_field, "a pseudo-field after a regular field")                    \
	_(missing_pseudo, "a request lacks :service, :method or :path")                  \
	_(bad_status, "a response status outside 100-599, or a request with a status")   \
	_(bad_deadline, "a response that carries a deadline")                            \
	_(bad_path, "the path does not start with '/'")                                  \
	_(bad_method, "the method is not an HTTP token")

enum class l7_error : uint8_t {
#define DPUMESH_L7_ERROR_ENUM(n, d) n,
	DPUMESH_FOREACH_L7_ERROR(DPUMESH_L7_ERROR_ENUM)
#undef DPUMESH_L7_ERROR_ENUM
	count
};

const char *l7_error_name(l7_error e) noexcept;

/** Trace fields a header has (l7_view::trace): the sidecar adds the missing ones. */
enum l7_trace : uint8_t {
	l7_trace_request_id = 1u << 0,  /**< x-request-id */
	l7_trace_traceparent = 1u << 1, /**< traceparent */
};

/** A decoded header: views into the decoded buffer, valid while it is. */
struct l7_view {
	l7_kind kind = l7_kind::request;
	uint8_t trace = 0;        /**< l7_trace bits: the trace fields among its regular fields */
	uint16_t status = 0;      /**< response: 100-599 */
	uint16_t flags = 0;       /**< l7_flag bits */
	uint32_t deadline_ms = 0; /**< request: remaining budget, 0 = none */
	std::string_view service, method, path; /**< request pseudo-fields */
	std::string_view reason, hop;           /**< response: mesh error reason and hop */
	/** The first regular field named "authorization": its value, noted as the fields are
	 *  walked (find() again was ~70 instructions of a JWT check); data() null: none. */
	std::string_view authorization;
	const uint8_t *fields = nullptr;        /**< first regular field */
	const uint8_t *end = nullptr;
	uint16_t nb_fields = 0; /**< regular fields */

	/** First regular field named `name` (lowercase), or an empty optional-like view. */
	bool find(std::string_view name, std::string_view *value) const noexcept;

	/** Calls fn(name, value) for each regular field in order. */
	template <typename Fn>
	void for_each(Fn &&fn) const
	{
		const uint8_t *p = fields;
		for (uint16_t i = 0; i < nb_fields; i++) {
			uint8_t nl = p[0];
			uint16_t vl = static_cast<uint16_t>((p[2] << 8) | p[3]);
			fn(std::string_view(reinterpret_cast<const char *>(p + 4), nl),
			   std::string_view(reinterpret_cast<const char *>(p + 4 + nl), vl));
			p += 4 + nl + vl;
		}
	}
};

/** Validates and decodes `len` bytes. On ok, *out refers into buf; on an error its
 *  contents are unspecified (partly written). */
l7_error l7_decode(const uint8_t *buf, size_t len, l7_view *out) noexcept;

/**
 * The service a request is for, without decoding the rest: port RX reads it from the first
 * frame to refuse a saturated service's requests before reassembly (docs/overload.md).
 * Checks the fixed part (magic, version, kind request, declared length == len, no status)
 * and walks the leading pseudo-fields, bounds-checked, up to ':service'. Fields after it
 * are not looked at: ok here does not mean l7_decode() accepts the header, but whatever
 * l7_decode() accepts as a request, this finds the same service in.
 * @return ok with *service viewing into buf; else why not (the caller decodes as usual)
 */
l7_error l7_peek_service(const uint8_t *buf, size_t len, std::string_view *service) noexcept;

/** Writes a header into a caller's buffer; never allocates. */
class l7_writer {
public:
	l7_writer(uint8_t *buf, size_t cap) noexcept : _buf(buf), _cap(cap) {}

	/**
	 * Continues a header that l7_decode() accepted (`len` bytes at the start of a buffer
	 * of `cap`): field() appends after its fields, finish() updates its length and field
	 * count in place (the sidecar adds x-request-id / traceparent this way).
	 */
	static l7_writer extend(uint8_t *buf, size_t len, size_t cap) noexcept
	{
		l7_writer w(buf, cap);
		if (len < l7_fixed_size || len > cap) {
			w._failed = true;
			return w;
		}
		w._started = true;
		w._len = len;
		w._nb = static_cast<uint16_t>(buf[6] << 8 | buf[7]);
		return w;
	}

	/** Starts a request (pseudo-fields :service, :method, :path). */
	void request(std::string_view service, std::string_view method, std::string_view path,
		     uint32_t deadline_ms = 0, uint16_t flags = 0) noexcept;
	/** Starts a response; reason/hop are set for mesh-generated errors. */
	void response(uint16_t status, uint16_t flags = 0, std::string_view reason = {},
		      std::string_view hop = {}) noexcept;
	/** Adds a regular field (name must be a lowercase token). */
	void field(std::string_view name, std::string_view value) noexcept;
	/**
	 * Adds a regular field whose `len`-byte value the mesh writes itself (trace ids), in
	 * place: returns where the value goes, or nullptr when it does not fit (the writer has
	 * failed then, as field() would). The caller writes exactly `len` bytes there before
	 * finish(). The name must be a lowercase token and the value must hold no NUL, CR or
	 * LF by construction: neither is checked (validating and copying every generated trace
	 * id was 5-8% of the forwarding path); the room, size and field-count limits are.
	 * Never for bytes from outside the mesh: those go through field(). Inline, the name's
	 * length a constant: out of line its copy was a call to libc's memmove, and the call
	 * with it 2% of the forwarding path's sidecar.
	 */
	template <size_t N> char *mesh_field(const char (&name)[N], uint16_t len) noexcept
	{
		static_assert(N >= 2 && N - 1 <= 255, "a name of 1-255 bytes");
		if (!_started) {
			_failed = true;
			return nullptr;
		}
		return reinterpret_cast<char *>(append(std::string_view(name, N - 1), len));
	}

	/** Finishes; returns the header length, or 0 if anything did not fit or was invalid. */
	size_t finish() noexcept
	{
		if (!_started || _failed)
			return 0;
		_buf[4] = static_cast<uint8_t>(_len >> 8); /* the length and count, big-endian */
		_buf[5] = static_cast<uint8_t>(_len);
		_buf[6] = static_cast<uint8_t>(_nb >> 8);
		_buf[7] = static_cast<uint8_t>(_nb);
		return _len;
	}
	bool failed() const noexcept { return _failed; }

private:
	void put(std::string_view name, std::string_view value) noexcept;
	/* A field of `len` value bytes: the bounds checked, name and length written; where the
	 * value goes, or nullptr (failed). Inline: with a constant name (mesh_field()) the
	 * name's copy is a constant-size store, not a call to libc. */
	uint8_t *append(std::string_view name, size_t len) noexcept
	{
		if (_failed)
			return nullptr;
		if (name.empty() || name.size() > 255 || len > l7_max_value ||
		    _nb == l7_max_fields || _cap - _len < 4 + name.size() + len ||
		    _len + 4 + name.size() + len > l7_max_size) {
			_failed = true;
			return nullptr;
		}
		uint8_t *p = _buf + _len;
		const uint8_t head[4] = {static_cast<uint8_t>(name.size()), 0,
					 static_cast<uint8_t>(len >> 8), static_cast<uint8_t>(len)};
		std::memcpy(p, head, 4);
		std::memcpy(p + 4, name.data(), name.size());
		_len += 4 + name.size() + len;
		_nb++;
		return p + 4 + name.size();
	}
	void begin(l7_kind kind, uint16_t status, uint16_t flags, uint32_t deadline_ms) noexcept;
	uint8_t *_buf;
	size_t _cap;
	size_t _len = 0;
	uint16_t _nb = 0;
	bool _started = false;
	bool _failed = false;
};

} // namespace dpumesh::wire
