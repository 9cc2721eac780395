// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-replay: replays captures out of a port at a set rate, matches answers, searches NDR/PDR.
#include <getopt.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dpumesh/common/eal.h"
#include "dpumesh/replay/capture.h"
#include "dpumesh/replay/generator.h"
#include "dpumesh/replay/report.h"
#include "dpumesh/replay/search.h"

namespace {

using namespace dpumesh;
using namespace dpumesh::replay;

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

enum class mode { fixed, ndr, latency };

struct options {
	std::vector<std::string> pcaps;
	uint16_t port = 0;
	match_mode match = match_mode::mesh;
	std::vector<std::string> dut_ips;
	mode run_mode = mode::fixed;
	rate_kind kind = rate_kind::pps;
	double rate = 10000;
	double duration = 10;
	uint64_t passes = 0;
	double drain = 0.5;
	search_config search;
	double pdr_loss = 0.5; /* percent */
	std::vector<double> loads;
	double latency_seconds = 5;
	std::string out;
	std::string label = "dut";
	double wait_link = 10;
	double progress = 0;
	unsigned idle_us = 0;
	uint16_t queues = 1;
};

void usage(FILE *f)
{
	std::fprintf(f,
"Usage: dpumesh-replay [EAL options] -- --pcap FILE [options]\n"
"Replays captures out of an ethdev port at a set rate, matches every answer to what it\n"
"sent, and reports loss and latency; or searches the highest rate with no loss (NDR) and\n"
"with a small loss (PDR). docs/benchmarks.md has the method.\n"
"  -r, --pcap FILE        capture to replay (repeatable; files play end to end)\n"
"  --port N               ethdev port (default 0: the first --vdev or -a device)\n"
"  --queues N             RX and TX queues of the port, 1 to 16 (default 1): each flow's\n"
"                         frames go out of the queue its addresses and ports hash to, as\n"
"                         a NIC's RSS spreads them (a net_memif peer's RX queue k is TX\n"
"                         queue k here: give a node of N workers N); answers from every queue\n"
"  --match mesh|frame     answers are mesh responses matched by correlation (dpumesh),\n"
"                         or the frames themselves (a reflector: testpmd 5tswap/macswap)\n"
"  --dut-ip IP[,IP]       mesh: only requests to these addresses expect an answer\n"
"  --mode fixed|ndr|latency  one trial at a rate (default); NDR+PDR search then latency\n"
"                         at --loads of the NDR; NDR search then latency at 10,50,90%%\n"
"  --pps R | --gbps G | --timing SPEED   fixed mode rate: frames/s (k/M suffixes), L1\n"
"                         Gbit/s, or the capture's own timing sped up by SPEED;\n"
"                         --pps max: unpaced, as fast as the port takes frames\n"
"  --duration S           fixed mode TX seconds (default 10; 0 = until --passes)\n"
"  --passes N             times through the capture (default 0 = no limit)\n"
"  --drain S              seconds of receiving after the last TX (default 0.5)\n"
"  --max-rate R --min-rate R   search bounds in frames/s (default 1M, 1k)\n"
"  --trial-seconds S --final-seconds S   search and verification trials (default 1, 5)\n"
"  --precision P          search stops at (upper-lower)/upper <= P (default 0.05)\n"
"  --pdr-loss PCT         PDR loss threshold in percent (default 0.5)\n"
"  --loads L,L            latency trials at these percentages of the NDR\n"
"  --latency-seconds S    length of each latency trial (default 5)\n"
"  --out DIR              write trials.csv, trials.json, summary.json, plots (gnuplot)\n"
"  --label NAME           name of the device under test in outputs (default dut)\n"
"  --wait-link S          wait for the port's link (memif peer) up to S s (default 10)\n"
"  --idle-sleep US        sleep US microseconds when a loop had nothing to do (default 0:\n"
"                         poll; give the CPU to pods sharing it, RX stamps up to US late)\n"
"  --progress S           fixed mode: a line every S seconds (sent/s, answers/s, unanswered, p50/p99)\n"
"  -h, --help\n"
"Exit status: 0 done; 1 error (port, capture, output); 2 bad usage; 3 fixed mode saw\n"
"loss, or the NDR search found no verified rate.\n");
}

bool parse_rate(const char *s, double &out)
{
	char *end;
	errno = 0;
	double v = std::strtod(s, &end);
	if (errno || end == s || v < 0)
		return false;
	if (*end == 'k' || *end == 'K')
		v *= 1e3, end++;
	else if (*end == 'M' || *end == 'm')
		v *= 1e6, end++;
	else if (*end == 'G' || *end == 'g')
		v *= 1e9, end++;
	/* "nan" and "inf" parse as numbers: no range test would refuse a NaN (every compare is
	 * false), and converting one to an integer is undefined */
	if (*end || !std::isfinite(v))
		return false;
	out = v;
	return true;
}

std::vector<std::string> split(const std::string &s)
{
	std::vector<std::string> v;
	size_t a = 0;
	while (a <= s.size()) {
		size_t b = s.find(',', a);
		if (b == std::string::npos)
			b = s.size();
		if (b > a)
			v.push_back(s.substr(a, b - a));
		a = b + 1;
	}
	return v;
}

int parse_args(int argc, char **argv, options &o)
{
	enum { o_port = 256, o_match, o_dut, o_mode, o_pps, o_gbps, o_timing, o_duration,
	       o_passes, o_drain, o_max, o_min, o_trial, o_final, o_prec, o_pdr, o_loads,
	       o_lat_s, o_out, o_label, o_wait, o_progress, o_idle, o_queues };
	static const option longopts[] = {
		{"pcap", required_argument, nullptr, 'r'}, {"port", required_argument, nullptr, o_port},
		{"match", required_argument, nullptr, o_match}, {"dut-ip", required_argument, nullptr, o_dut},
		{"mode", required_argument, nullptr, o_mode}, {"pps", required_argument, nullptr, o_pps},
		{"gbps", required_argument, nullptr, o_gbps}, {"timing", required_argument, nullptr, o_timing},
		{"duration", required_argument, nullptr, o_duration},
		{"passes", required_argument, nullptr, o_passes}, {"drain", required_argument, nullptr, o_drain},
		{"max-rate", required_argument, nullptr, o_max}, {"min-rate", required_argument, nullptr, o_min},
		{"trial-seconds", required_argument, nullptr, o_trial},
		{"final-seconds", required_argument, nullptr, o_final},
		{"precision", required_argument, nullptr, o_prec},
		{"pdr-loss", required_argument, nullptr, o_pdr}, {"loads", required_argument, nullptr, o_loads},
		{"latency-seconds", required_argument, nullptr, o_lat_s},
		{"out", required_argument, nullptr, o_out}, {"label", required_argument, nullptr, o_label},
		{"wait-link", required_argument, nullptr, o_wait}, {"help", no_argument, nullptr, 'h'},
		{"progress", required_argument, nullptr, o_progress},
		{"idle-sleep", required_argument, nullptr, o_idle},
		{"queues", required_argument, nullptr, o_queues},
		{nullptr, 0, nullptr, 0}};
	int c;
	optind = 1;
	auto num = [](const char *name, const char *s, double &v, double lo, double hi) {
		if (!parse_rate(s, v) || v < lo || v > hi) {
			std::fprintf(stderr, "dpumesh-replay: --%s %s: want a number in [%g, %g]\n",
				     name, s, lo, hi);
			return false;
		}
		return true;
	};
	double d = 0; /* an option's number: converted only once num() took it (in range) */
	while ((c = getopt_long(argc, argv, "r:h", longopts, nullptr)) != -1) {
		bool ok = true;
		switch (c) {
		case 'r': o.pcaps.push_back(optarg); break;
		case o_port:
			if ((ok = num("port", optarg, d, 0, RTE_MAX_ETHPORTS - 1)))
				o.port = uint16_t(d);
			break;
		case o_match:
			if (!std::strcmp(optarg, "mesh"))
				o.match = match_mode::mesh;
			else if (!std::strcmp(optarg, "frame"))
				o.match = match_mode::frame;
			else
				ok = false;
			break;
		case o_dut: o.dut_ips = split(optarg); break;
		case o_mode:
			if (!std::strcmp(optarg, "fixed"))
				o.run_mode = mode::fixed;
			else if (!std::strcmp(optarg, "ndr"))
				o.run_mode = mode::ndr;
			else if (!std::strcmp(optarg, "latency"))
				o.run_mode = mode::latency;
			else
				ok = false;
			break;
		case o_pps:
			if (!std::strcmp(optarg, "max")) {
				o.kind = rate_kind::unpaced;
				o.rate = 0;
			} else {
				o.kind = rate_kind::pps;
				ok = num("pps", optarg, o.rate, 1, 1e9);
			}
			break;
		case o_gbps: o.kind = rate_kind::gbps; ok = num("gbps", optarg, o.rate, 1e-6, 1e4); break;
		case o_timing: o.kind = rate_kind::timing; ok = num("timing", optarg, o.rate, 1e-3, 1e6); break;
		case o_duration: ok = num("duration", optarg, o.duration, 0, 86400 * 365); break;
		case o_passes:
			if ((ok = num("passes", optarg, d, 0, 1e15)))
				o.passes = uint64_t(d);
			break;
		case o_drain: ok = num("drain", optarg, o.drain, 0, 60); break;
		case o_max: ok = num("max-rate", optarg, o.search.max_rate, 1, 1e9); break;
		case o_min: ok = num("min-rate", optarg, o.search.min_rate, 1, 1e9); break;
		case o_trial: ok = num("trial-seconds", optarg, o.search.trial_seconds, 0.01, 3600); break;
		case o_final: ok = num("final-seconds", optarg, o.search.final_seconds, 0.01, 3600); break;
		case o_prec: ok = num("precision", optarg, o.search.precision, 1e-4, 0.5); break;
		case o_pdr: ok = num("pdr-loss", optarg, o.pdr_loss, 0, 100); break;
		case o_loads:
			o.loads.clear();
			for (const auto &s : split(optarg)) {
				if (!(ok = num("loads", s.c_str(), d, 0.1, 100)))
					break;
				o.loads.push_back(d);
			}
			break;
		case o_lat_s: ok = num("latency-seconds", optarg, o.latency_seconds, 0.01, 3600); break;
		case o_out: o.out = optarg; break;
		case o_label: o.label = optarg; break;
		case o_wait: ok = num("wait-link", optarg, o.wait_link, 0, 3600); break;
		case o_idle:
			if ((ok = num("idle-sleep", optarg, d, 0, 100000)))
				o.idle_us = unsigned(d);
			break;
		case o_progress: ok = num("progress", optarg, o.progress, 0.1, 3600); break;
		case o_queues:
			ok = num("queues", optarg, d, 1, max_queues) && d == double(uint16_t(d));
			if (ok)
				o.queues = uint16_t(d);
			break;
		case 'h': usage(stdout); std::exit(0);
		default: usage(stderr); return 2;
		}
		if (!ok) {
			std::fprintf(stderr, "dpumesh-replay: bad value for an option: %s\n", optarg);
			return 2;
		}
	}
	if (optind < argc) {
		std::fprintf(stderr, "dpumesh-replay: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	if (o.pcaps.empty()) {
		std::fprintf(stderr, "dpumesh-replay: give a capture with --pcap FILE (see --help)\n");
		return 2;
	}
	if (o.run_mode == mode::fixed && o.duration == 0 && o.passes == 0) {
		std::fprintf(stderr, "dpumesh-replay: --duration 0 needs --passes N\n");
		return 2;
	}
	if (o.search.min_rate > o.search.max_rate) {
		std::fprintf(stderr, "dpumesh-replay: --min-rate is above --max-rate\n");
		return 2;
	}
	if (o.loads.empty())
		o.loads = o.run_mode == mode::latency ? std::vector<double>{10, 50, 90}
						      : std::vector<double>{50};
	return 0;
}

/** Collects every trial for the outputs. */
struct recorder {
	std::string label;
	std::string csv;
	std::vector<std::string> json;
	void add(const std::string &phase, const trial_result &r)
	{
		print_trial(stdout, label, phase, r);
		std::fflush(stdout);
		csv += csv_row(label, phase, r);
		json.push_back(json_trial(label, phase, r));
	}
};

bool write_file(const std::string &path, const std::string &text)
{
	FILE *f = std::fopen(path.c_str(), "w");
	if (!f) {
		std::fprintf(stderr, "dpumesh-replay: cannot write %s: %s\n", path.c_str(),
			     std::strerror(errno));
		return false;
	}
	bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
	ok = std::fclose(f) == 0 && ok;
	if (!ok)
		std::fprintf(stderr, "dpumesh-replay: writing %s failed\n", path.c_str());
	return ok;
}

const char plot_script[] =
	"# dpumesh-replay plots: gnuplot plot.gp (in this directory)\n"
	"set datafile separator ','\n"
	"set terminal pngcairo size 900,500 noenhanced\n"
	"set key outside\n"
	"set output 'loss_vs_rate.png'\n"
	"set title 'loss ratio vs offered rate (search trials)'\n"
	"set xlabel 'offered frames/s'; set ylabel 'loss %'; set logscale x\n"
	"plot \"< grep -E ',(ndr|pdr|final|fixed),' trials.csv\" using 3:($12*100) with points pt 7 title 'trials'\n"
	"set output 'latency_vs_load.png'\n"
	"set title 'latency percentiles vs load'\n"
	"set xlabel 'offered frames/s'; set ylabel 'latency (us)'; unset logscale x; set logscale y\n"
	"plot for [c=23:26] \"< grep ',latency,' trials.csv\" using 3:c with linespoints "
	"title word('p50 p90 p99 p99.9', c - 22)\n";

/* Waits for the link (a memif client: until the server has accepted it). A memif server
 * that was not started yet when the client connected drops it and the client does not try
 * again, so the port is restarted every 5 s while the link is down; not more often:
 * stopping a client in the middle of its handshake has crashed dpdk-testpmd 22.11's
 * interrupt thread. */
bool wait_link(uint16_t port, double seconds)
{
	for (unsigned i = 0;; i++) {
		rte_eth_link l{};
		if (rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP)
			return true;
		if (i * 0.05 >= seconds || g_stop.load())
			return false;
		if (i % 100 == 99) {
			rte_eth_dev_stop(port);
			(void)rte_eth_dev_start(port);
		}
		usleep(50000);
	}
}

int run(const options &o)
{
	capture_options co;
	co.match = o.match;
	co.dut_ips = o.dut_ips;
	auto cap = load_captures(o.pcaps, co);
	if (!cap) {
		std::fprintf(stderr, "dpumesh-replay: %s\n", cap.error().message().c_str());
		return 1;
	}
	std::printf("capture: %zu frames (%.0f B mean), %u messages expect an answer per pass, "
		    "%u frames untracked, %u skipped (too large), pass = %.3f s of capture time\n",
		    cap->frames.size(), cap->mean_frame_len(), cap->nb_messages,
		    cap->nb_untracked, cap->nb_skipped_large, double(cap->span_ns) / 1e9);
	if (cap->nb_messages == 0)
		std::fprintf(stderr, "dpumesh-replay: warning: no frame expects an answer "
				     "(--match %s); loss and latency will be empty\n",
			     o.match == match_mode::mesh ? "mesh" : "frame");
	if (rte_eth_dev_count_avail() == 0 || !rte_eth_dev_is_valid_port(o.port)) {
		std::fprintf(stderr, "dpumesh-replay: no port %u: create one with EAL --vdev (e.g. "
				     "net_memif0,role=client,socket=/tmp/dpumesh-node1.memif) or -a PCI\n",
			     o.port);
		return 1;
	}
	rte_mempool *pool = rte_pktmbuf_pool_create("replay_pool", 16383, 256, 0,
						    RTE_MBUF_DEFAULT_BUF_SIZE, int(rte_socket_id()));
	if (!pool) {
		std::fprintf(stderr, "dpumesh-replay: mbuf pool: %s (give EAL more memory: -m)\n",
			     rte_strerror(rte_errno));
		return 1;
	}
	if (auto st = start_port(o.port, pool, 1024, o.wait_link, o.queues); !st) {
		std::fprintf(stderr, "dpumesh-replay: %s\n", st.message().c_str());
		return 1;
	}
	if (!wait_link(o.port, o.wait_link)) {
		std::fprintf(stderr, "dpumesh-replay: port %u link is down after %.0f s: is the device "
				     "under test running and listening (memif server socket)?%s\n",
			     o.port, o.wait_link,
			     o.queues > 1 ? " Does its port have --queues' count of queues? A memif "
					    "server refuses a client that opens more queues than it has"
					  : "");
		rte_eth_dev_stop(o.port);
		return 1;
	}
	auto gen = generator::create(o.port, pool, *cap, o.match, o.queues);
	if (!gen) {
		std::fprintf(stderr, "dpumesh-replay: %s\n", gen.error().message().c_str());
		return 1;
	}
	if (o.queues > 1) {
		std::printf("queues: %u, frames of a pass out of each:", o.queues);
		for (uint32_t n : (*gen)->frames_per_queue())
			std::printf(" %u", n);
		std::printf("\n");
	}
	recorder rec{o.label, csv_header(), {}};
	uint8_t trial_id = 0;
	auto trial = [&](rate_kind k, double v, double secs, uint64_t passes, const char *phase,
			 double progress = 0) {
		trial_config c;
		trial_result last;
		histogram window;
		c.progress_seconds = progress;
		c.idle_sleep_us = o.idle_us;
		c.on_progress = [&](const trial_result &now) {
			/* the interval since the last line: rates, and percentiles of its answers */
			double dt = now.tx_seconds - last.tx_seconds;
			if (dt <= 0)
				return;
			window = now.latency;
			std::printf("replay %7.1f s  sent %8.0f/s  answers %8.0f/s  lost %" PRIu64
				    " (total)  untracked %" PRIu64 "  other %" PRIu64
				    "  latency p50 %.0f us p99 %.0f us (since start)\n",
				    now.tx_seconds, double(now.tx_frames - last.tx_frames) / dt,
				    double(now.answered - last.answered) / dt,
				    now.expected > now.answered ? now.expected - now.answered : 0,
				    now.tx_untracked, now.rx_other, window.percentile(50) / 1e3,
				    window.percentile(99) / 1e3);
			std::fflush(stdout);
			last = now;
		};
		c.kind = k;
		c.value = v;
		c.seconds = secs;
		c.passes = passes;
		c.drain_seconds = o.drain;
		c.trial_id = ++trial_id;
		trial_result r = (*gen)->run(c, &g_stop);
		rec.add(phase, r);
		return r;
	};
	std::string summary = "{\"label\":\"" + o.label + "\"";
	int rc = 0;
	if (o.run_mode == mode::fixed) {
		trial_result r = trial(o.kind, o.rate, o.duration, o.passes, "fixed", o.progress);
		rc = r.lost() ? 3 : 0;
		summary += ",\"fixed\":" + json_trial(o.label, "fixed", r);
	} else {
		auto search_phase = [&](double threshold, const char *phase, double lower) {
			return search(o.search, threshold,
				      [&](double rate, double secs, bool verification) {
					      if (g_stop.load())
						      return trial_outcome{1.0, 0, false, true};
					      trial_result r = trial(rate_kind::pps, rate, secs, 0,
								     verification ? "final" : phase);
					      rte_eth_link l{};
					      if (r.tx_frames == 0 &&
						  (rte_eth_link_get_nowait(o.port, &l) != 0 ||
						   l.link_status != RTE_ETH_LINK_UP)) {
						      std::fprintf(stderr, "dpumesh-replay: the port took no "
									   "frame and its link is down: is "
									   "the device under test still up?\n");
						      g_stop.store(true);
					      }
					      /* the generator could not offer the rate: not a result */
					      bool ok = r.tx_pps() >= 0.98 * rate;
					      return trial_outcome{r.loss_ratio(), r.answers_per_s(), ok,
								   g_stop.load()};
				      },
				      lower);
		};
		auto row = [](const char *name, const search_result &s) {
			char b[256];
			std::snprintf(b, sizeof(b), ",\"%s\":{\"rate\":%.1f,\"upper\":%.1f,\"verified\":%s,"
						     "\"trials\":%zu}",
				      name, s.rate, s.upper, s.verified ? "true" : "false", s.steps.size());
			return std::string(b);
		};
		search_result ndr = search_phase(0.0, "ndr", 0);
		summary += row("ndr", ndr);
		std::printf("%-10s NDR %.0f pps (%s, %zu trials, lowest failing %.0f)\n", o.label.c_str(),
			    ndr.rate, ndr.verified ? "verified" : "NOT verified", ndr.steps.size(), ndr.upper);
		if (o.run_mode == mode::ndr && !g_stop.load()) {
			search_result pdr = search_phase(o.pdr_loss / 100.0, "pdr", ndr.rate);
			summary += row("pdr", pdr);
			std::printf("%-10s PDR(%.2f%%) %.0f pps (%s, %zu trials)\n", o.label.c_str(),
				    o.pdr_loss, pdr.rate, pdr.verified ? "verified" : "NOT verified",
				    pdr.steps.size());
		}
		summary += ",\"latency\":[";
		bool first = true;
		for (double load : o.loads) {
			if (g_stop.load() || ndr.rate <= 0)
				break;
			trial_result r = trial(rate_kind::pps, ndr.rate * load / 100.0,
					       o.latency_seconds, 0, "latency");
			summary += (first ? "" : ",") + std::string("{\"load_percent\":") +
				   std::to_string(load) + ",\"trial\":" +
				   json_trial(o.label, "latency", r) + "}";
			first = false;
		}
		summary += "]";
		rc = ndr.verified ? 0 : 3;
	}
	/* the generator's own port: what it could not receive (ring overflow, no mbuf) is
	 * answers lost before matching, not the device's loss */
	rte_eth_stats ps{};
	if (rte_eth_stats_get(o.port, &ps) == 0) {
		std::printf("port %u: rx %" PRIu64 " tx %" PRIu64 " rx_missed %" PRIu64
			    " rx_errors %" PRIu64 " rx_nombuf %" PRIu64 " tx_errors %" PRIu64 "\n",
			    o.port, ps.ipackets, ps.opackets, ps.imissed, ps.ierrors, ps.rx_nombuf,
			    ps.oerrors);
		char b[256];
		std::snprintf(b, sizeof(b),
			      ",\"port\":{\"rx\":%" PRIu64 ",\"tx\":%" PRIu64 ",\"rx_missed\":%" PRIu64
			      ",\"rx_errors\":%" PRIu64 ",\"rx_nombuf\":%" PRIu64 ",\"tx_errors\":%" PRIu64
			      "}",
			      ps.ipackets, ps.opackets, ps.imissed, ps.ierrors, ps.rx_nombuf, ps.oerrors);
		summary += b;
	}
	summary += "}\n";
	if (!o.out.empty()) {
		mkdir(o.out.c_str(), 0755);
		std::string json = "[\n";
		for (size_t i = 0; i < rec.json.size(); i++)
			json += rec.json[i] + (i + 1 < rec.json.size() ? ",\n" : "\n");
		json += "]\n";
		bool ok = write_file(o.out + "/trials.csv", rec.csv) &&
			  write_file(o.out + "/trials.json", json) &&
			  write_file(o.out + "/summary.json", summary) &&
			  write_file(o.out + "/plot.gp", plot_script);
		if (!ok)
			rc = 1;
		else if (std::system(("command -v gnuplot >/dev/null && cd '" + o.out +
				      "' && gnuplot plot.gp 2>/dev/null").c_str()) != 0)
			std::printf("plots: gnuplot missing or failed (e.g. no latency trial); "
				    "%s/plot.gp is there to rerun\n", o.out.c_str());
	}
	rte_eth_dev_stop(o.port);
	rte_eth_dev_close(o.port);
	rte_mempool_free(pool);
	return rc;
}

} // namespace

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
			bool after_dashes = false;
			for (int j = 1; j < i; j++)
				after_dashes |= !std::strcmp(argv[j], "--");
			if (after_dashes) {
				usage(stdout);
				return 0;
			}
		}
	int n = rte_eal_init(argc, argv);
	if (n < 0) {
		std::fprintf(stderr, "dpumesh-replay: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	argv[0] = const_cast<char *>("dpumesh-replay");
	options o;
	int rc = parse_args(argc, argv, o);
	if (rc == 0) {
		std::signal(SIGINT, on_signal);
		std::signal(SIGTERM, on_signal);
		rc = run(o);
	}
	dpumesh::eal_cleanup();
	return rc;
}
