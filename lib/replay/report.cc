// SPDX-License-Identifier: BSD-3-Clause
// CSV, JSON and text output of trials (dpumesh/replay/report.h).
#include "dpumesh/replay/report.h"

#include <cinttypes>
#include <cstdarg>

namespace dpumesh::replay {

namespace {

const char *kind_name(rate_kind k)
{
	return k == rate_kind::pps ? "pps" : k == rate_kind::gbps ? "gbps"
		: k == rate_kind::timing ? "timing" : "unpaced";
}

double us(uint64_t ns) { return double(ns) / 1000.0; }

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	return buf;
}

} // namespace

std::string csv_header()
{
	return "label,phase,target,kind,seconds,tx_frames,tx_pps,tx_gbps,expected,answered,lost,"
	       "loss_ratio,duplicates,stale,rx_other,untracked,tx_full,answers_2xx,answers_4xx,"
	       "answers_5xx,mesh_errors,lat_min_us,lat_p50_us,lat_p90_us,lat_p99_us,lat_p999_us,"
	       "lat_max_us\n";
}

std::string csv_row(const std::string &label, const std::string &phase, const trial_result &r)
{
	const histogram &h = r.latency;
	return fmt("%s,%s,%.6g,%s,%.3f,%" PRIu64 ",%.1f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
		   ",%.6f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n",
		   label.c_str(), phase.c_str(), r.config.value, kind_name(r.config.kind),
		   r.tx_seconds, r.tx_frames, r.tx_pps(), r.tx_gbps(), r.expected, r.answered,
		   r.lost(), r.loss_ratio(), r.duplicates, r.stale, r.rx_other, r.tx_untracked,
		   r.tx_full, r.classes.ok_2xx, r.classes.c4xx, r.classes.c5xx,
		   r.classes.mesh_error, us(h.min()), us(h.percentile(50)), us(h.percentile(90)),
		   us(h.percentile(99)), us(h.percentile(99.9)), us(h.max()));
}

std::string json_trial(const std::string &label, const std::string &phase, const trial_result &r)
{
	const histogram &h = r.latency;
	return fmt("{\"label\":\"%s\",\"phase\":\"%s\",\"target\":%.6g,\"kind\":\"%s\","
		   "\"seconds\":%.3f,\"tx_frames\":%" PRIu64 ",\"tx_pps\":%.1f,\"tx_gbps\":%.4f,"
		   "\"expected\":%" PRIu64 ",\"answered\":%" PRIu64 ",\"lost\":%" PRIu64
		   ",\"loss_ratio\":%.6f,\"duplicates\":%" PRIu64 ",\"stale\":%" PRIu64
		   ",\"rx_other\":%" PRIu64 ",\"settled\":%" PRIu64 ",\"untracked\":%" PRIu64
		   ",\"tx_full\":%" PRIu64
		   ",\"answers\":{\"2xx\":%" PRIu64 ",\"4xx\":%" PRIu64 ",\"5xx\":%" PRIu64
		   ",\"mesh_error\":%" PRIu64 ",\"other\":%" PRIu64 "},"
		   "\"latency_us\":{\"min\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,"
		   "\"p99.9\":%.1f,\"max\":%.1f,\"mean\":%.1f}}",
		   label.c_str(), phase.c_str(), r.config.value, kind_name(r.config.kind),
		   r.tx_seconds, r.tx_frames, r.tx_pps(), r.tx_gbps(), r.expected, r.answered,
		   r.lost(), r.loss_ratio(), r.duplicates, r.stale, r.rx_other, r.settled,
		   r.tx_untracked, r.tx_full, r.classes.ok_2xx, r.classes.c4xx, r.classes.c5xx,
		   r.classes.mesh_error, r.classes.other, us(h.min()), us(h.percentile(50)),
		   us(h.percentile(90)), us(h.percentile(99)), us(h.percentile(99.9)),
		   us(h.max()), h.mean() / 1000.0);
}

void print_trial(FILE *out, const std::string &label, const std::string &phase,
		 const trial_result &r)
{
	const histogram &h = r.latency;
	std::fprintf(out,
		     "%-10s %-7s target %.6g %s  sent %" PRIu64 " frames in %.2f s = %.0f pps "
		     "%.3f Gbit/s\n"
		     "           answers %" PRIu64 "/%" PRIu64 " (%.0f/s)  lost %" PRIu64
		     " (%.4f%%)  2xx %" PRIu64 " 4xx %" PRIu64 " 5xx %" PRIu64 " mesh %" PRIu64
		     "  dup %" PRIu64 " stale %" PRIu64 " other %" PRIu64 " untracked %" PRIu64 "\n"
		     "           latency us p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f"
		     "  tx_full %" PRIu64 " settled %" PRIu64 "\n",
		     label.c_str(), phase.c_str(), r.config.value,
		     r.config.kind == rate_kind::pps ? "pps" : r.config.kind == rate_kind::gbps
			     ? "Gbit/s" : r.config.kind == rate_kind::timing ? "x timing" : "unpaced",
		     r.tx_frames, r.tx_seconds, r.tx_pps(), r.tx_gbps(), r.answered, r.expected,
		     r.answers_per_s(), r.lost(), 100.0 * r.loss_ratio(), r.classes.ok_2xx,
		     r.classes.c4xx, r.classes.c5xx, r.classes.mesh_error, r.duplicates, r.stale,
		     r.rx_other, r.tx_untracked, us(h.percentile(50)), us(h.percentile(90)),
		     us(h.percentile(99)), us(h.percentile(99.9)), us(h.max()), r.tx_full,
		     r.settled);
}

} // namespace dpumesh::replay
