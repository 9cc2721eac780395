// SPDX-License-Identifier: BSD-3-Clause
// The pod control channel's comch messages: REGISTER built by the host, checked on the Arm.
#include "dpumesh/doca/pod_msg.h"

#include <cstring>
#include <string_view>

#include "dpumesh/podchan/channel.h"
#include "dpumesh/podlayout/pod_layout.h"

namespace dpumesh::doca {

result<comch_register_view> parse_register(std::span<const uint8_t> msg)
{
	comch_register_view v{};
	comch_register_msg m;
	if (msg.size() < sizeof(m))
		return errorf("REGISTER: %zu bytes, shorter than its %zu-byte head", msg.size(), sizeof(m));
	std::memcpy(&m, msg.data(), sizeof(m)); /* the receive buffer need not be aligned */
	const dpumesh_ctrl_hdr &h = m.reg.hdr;
	if (h.magic != DPUMESH_CTRL_MAGIC)
		return errorf("REGISTER: bad magic 0x%08x", h.magic);
	if (h.version != DPUMESH_CTRL_VERSION)
		return errorf("REGISTER: version %u (expected %u)", h.version, DPUMESH_CTRL_VERSION);
	if (h.type != DPUMESH_CTRL_REGISTER)
		return errorf("REGISTER: type %u", h.type);
	if (h.length != msg.size())
		return errorf("REGISTER: header says %u bytes, message has %zu", h.length, msg.size());
	if (m.desc_len == 0 || m.desc_len > comch_max_desc)
		return errorf("REGISTER: descriptor of %u bytes (1..%u)", m.desc_len, comch_max_desc);
	if (m.bell_len > comch_max_desc)
		return errorf("REGISTER: doorbell export of %u bytes (0..%u)", m.bell_len, comch_max_desc);
	if (uint64_t{m.desc_len} + m.bell_len != msg.size() - sizeof(m))
		return errorf("REGISTER: desc_len %u + bell_len %u, %zu bytes follow", m.desc_len, m.bell_len,
			      msg.size() - sizeof(m));
	if (h.reserved != 0 || m.reg.reserved != 0)
		return errorf("REGISTER: reserved words not zero");
	const char *svc = m.reg.service;
	const size_t svc_len = strnlen(svc, sizeof(m.reg.service));
	if (svc_len == sizeof(m.reg.service))
		return errorf("REGISTER: service name not NUL-terminated");
	for (size_t i = svc_len; i < sizeof(m.reg.service); i++)
		if (svc[i] != 0)
			return errorf("REGISTER: service name not NUL-padded");
	if (!podchan::valid_service_name(std::string_view(svc, svc_len)))
		return errorf("REGISTER: invalid service name");
	if (m.reg.nb_workers == 0 || m.reg.nb_workers > DPUMESH_MAX_WORKERS)
		return errorf("REGISTER: nb_workers %u (1..%u)", m.reg.nb_workers, DPUMESH_MAX_WORKERS);
	dpumesh_pod_layout layout;
	if (int rc = dpumesh_pod_layout_compute(&m.reg.geometry, &layout); rc != DPUMESH_LAYOUT_OK)
		return errorf("REGISTER: invalid geometry (layout error %d)", rc);
	if (m.base == 0 || m.base % 4096 != 0)
		return errorf("REGISTER: memory base 0x%llx not 4 KiB-aligned", static_cast<unsigned long long>(m.base));
	const uint64_t need = comch_pod_memory_size(m.reg);
	if (m.len < need || m.base + m.len < m.base)
		return errorf("REGISTER: memory of %llu bytes at 0x%llx (needs %llu)",
			      static_cast<unsigned long long>(m.len), static_cast<unsigned long long>(m.base),
			      static_cast<unsigned long long>(need));
	v.reg = m.reg;
	v.base = m.base;
	v.len = m.len;
	v.desc = msg.subspan(sizeof(m), m.desc_len);
	v.bell = msg.subspan(sizeof(m) + m.desc_len, m.bell_len);
	return v;
}

uint64_t comch_pod_memory_size(const dpumesh_ctrl_register &reg) noexcept
{
	dpumesh_pod_layout l;
	if (dpumesh_pod_layout_compute(&reg.geometry, &l) != DPUMESH_LAYOUT_OK)
		return 0;
	return (l.total_size + 4095) / 4096 * 4096 + dpumesh_tx_region_size(reg.geometry.sq_depth, reg.nb_workers);
}

std::vector<uint8_t> make_register(const dpumesh_ctrl_register &reg, uint64_t base, uint64_t len,
				   std::span<const uint8_t> desc, std::span<const uint8_t> bell)
{
	comch_register_msg m{};
	m.base = base;
	m.len = len;
	m.reg = reg;
	m.reg.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTER, sizeof(reg));
	m.reg.hdr.length = static_cast<uint32_t>(sizeof(m) + desc.size() + bell.size());
	m.desc_len = static_cast<uint32_t>(desc.size());
	m.bell_len = static_cast<uint32_t>(bell.size());
	std::vector<uint8_t> out(sizeof(m) + desc.size() + bell.size());
	std::memcpy(out.data(), &m, sizeof(m));
	if (!desc.empty())
		std::memcpy(out.data() + sizeof(m), desc.data(), desc.size());
	if (!bell.empty())
		std::memcpy(out.data() + sizeof(m) + desc.size(), bell.data(), bell.size());
	return out;
}

} // namespace dpumesh::doca
