// SPDX-License-Identifier: BSD-3-Clause
// Test helper: real child processes with captured output.
#include "subprocess.h"

#include <fcntl.h>
#include <pty.h>

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dpumesh::test {

namespace {

/* A cross build's tests run under qemu-user (scripts/cross-arm64.sh), and so do the
 * programs they start: DPUMESH_TEST_EMULATOR (the emulator's command line, its first word a
 * full path since execv() does not search PATH, words split at
 * spaces) is put before the first word that is an ELF for this process's own machine,
 * which the host kernel cannot run (the program itself, or the one a host tool such as
 * chrt or taskset runs); the host's own tools (ip, bash, testpmd) run as they are. */
void prefix_emulator(std::vector<std::string> &argv)
{
	const char *emu = std::getenv("DPUMESH_TEST_EMULATOR");
	if (!emu || !*emu || argv.empty())
		return;
	auto machine = [](const char *path) {
		unsigned char h[20] = {};
		std::ifstream f(path, std::ios::binary);
		f.read(reinterpret_cast<char *>(h), sizeof(h));
		if (f.gcount() != sizeof(h) || std::memcmp(h, "\x7f" "ELF", 4) != 0)
			return -1;
		return h[18] | h[19] << 8; /* e_machine, little-endian */
	};
	static const int own = machine("/proc/self/exe"); /* once per test program */
	if (own < 0)
		return;
	for (auto at = argv.begin(); at != argv.end(); ++at) {
		if (at->empty() || (*at)[0] != '/' || machine(at->c_str()) != own)
			continue;
		std::vector<std::string> words;
		std::istringstream in(emu);
		for (std::string w; in >> w;)
			words.push_back(w);
		argv.insert(at, words.begin(), words.end());
		return;
	}
}

} // namespace

subprocess::subprocess(std::vector<std::string> argv, io mode)
{
	prefix_emulator(argv);
	if (mode == io::pty) {
		int master = -1;
		_pid = forkpty(&master, nullptr, nullptr, nullptr);
		if (_pid < 0)
			throw std::runtime_error("forkpty failed");
		if (_pid == 0) {
			std::vector<char *> args;
			for (auto &a : argv)
				args.push_back(a.data());
			args.push_back(nullptr);
			execv(args[0], args.data());
			std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
			_exit(127);
		}
		_fd = master;
		fcntl(_fd, F_SETFD, FD_CLOEXEC);
		fcntl(_fd, F_SETFL, fcntl(_fd, F_GETFL) | O_NONBLOCK);
		return;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		throw std::runtime_error("pipe2 failed");
	_pid = fork();
	if (_pid < 0)
		throw std::runtime_error("fork failed");
	if (_pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		std::vector<char *> args;
		for (auto &a : argv)
			args.push_back(a.data());
		args.push_back(nullptr);
		execv(args[0], args.data());
		std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	_fd = fds[0];
	fcntl(_fd, F_SETFL, fcntl(_fd, F_GETFL) | O_NONBLOCK);
}

subprocess::~subprocess()
{
	if (_pid > 0 && !_reaped) {
		kill(_pid, SIGKILL);
		waitpid(_pid, nullptr, 0);
	}
	if (_fd >= 0)
		close(_fd);
}

void subprocess::drain(int timeout_ms)
{
	if (_fd < 0)
		return;
	pollfd p{_fd, POLLIN, 0};
	if (poll(&p, 1, timeout_ms) <= 0)
		return;
	char buf[65536];
	for (;;) {
		ssize_t n = read(_fd, buf, sizeof(buf));
		if (n > 0) {
			_out.append(buf, static_cast<size_t>(n));
			continue;
		}
		if (n == 0 || (n < 0 && errno == EIO)) { /* EIO: the pty's other side closed */
			close(_fd);
			_fd = -1;
		}
		break;
	}
}

const std::string &subprocess::output()
{
	drain(0);
	return _out;
}

bool subprocess::wait_output(const std::function<bool(const std::string &)> &pred,
			     std::chrono::milliseconds limit)
{
	auto end = std::chrono::steady_clock::now() + limit;
	while (std::chrono::steady_clock::now() < end) {
		if (pred(_out))
			return true;
		if (_fd < 0) {
			return pred(_out);
		}
		drain(50);
	}
	return pred(_out);
}

bool subprocess::write(const std::string &keys)
{
	size_t done = 0;
	while (_fd >= 0 && done < keys.size()) {
		ssize_t n = ::write(_fd, keys.data() + done, keys.size() - done);
		if (n > 0)
			done += static_cast<size_t>(n);
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		else
			drain(5);
	}
	return done == keys.size();
}

void subprocess::signal(int sig)
{
	if (_pid > 0 && !_reaped)
		kill(_pid, sig);
}

int subprocess::wait(std::chrono::milliseconds limit)
{
	if (_reaped)
		return _status;
	auto end = std::chrono::steady_clock::now() + limit;
	bool extended = false;
	for (;;) {
		drain(20);
		int st;
		pid_t r = waitpid(_pid, &st, WNOHANG);
		if (r == _pid) {
			_reaped = true;
			while (_fd >= 0)
				drain(20);
			_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			return _status;
		}
		if (std::chrono::steady_clock::now() >= end) {
			/* Its main thread has returned (a zombie leader): the exit has begun and
			 * waits for the kernel to run each remaining thread once to tear it down.
			 * On a loaded 2-vCPU box the scheduler has left such a thread runnable for
			 * over 30 s (docs/memory-model.md, "Both wait for the control thread"): that
			 * is not the program hanging, so it gets up to 120 s more, once. */
			if (!extended && leader_exited(_pid)) {
				extended = true;
				end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
				continue;
			}
			_out += stacks_of(_pid);
			return -1;
		}
	}
}

std::vector<std::string> task_stat(pid_t pid, pid_t tid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
	const std::string s((std::istreambuf_iterator<char>(in)), {});
	const size_t close = s.rfind(')'); /* the command may hold spaces and parentheses */
	if (close == std::string::npos)
		return {};
	std::istringstream rest(s.substr(close + 1));
	return {std::istream_iterator<std::string>(rest), {}};
}

bool leader_exited(pid_t pid)
{
	const std::vector<std::string> f = task_stat(pid, pid);
	return !f.empty() && f[0] == "Z";
}

std::string stacks_of(pid_t pid)
{
	/* what each thread is doing, from /proc (no tool needed): its name, state, user and
	 * system time, the kernel function it sleeps in, the system call it is in (number
	 * first, as the kernel prints it) and its kernel stack */
	std::string out = "\n---- pid " + std::to_string(pid) + " did not exit: its threads ----\n";
	const std::string task = "/proc/" + std::to_string(pid) + "/task";
	std::error_code ec;
	for (const auto &t : std::filesystem::directory_iterator(task, ec)) {
		auto slurp = [&](const char *f) {
			std::ifstream in(t.path() / f);
			std::string s((std::istreambuf_iterator<char>(in)), {});
			while (!s.empty() && (s.back() == '\n' || s.back() == '\0'))
				s.pop_back();
			return s;
		};
		/* state, utime and stime (fields 3, 14, 15): a thread that runs up CPU time is
		 * spinning, one whose times stand still while runnable is not being scheduled */
		const std::vector<std::string> v =
			task_stat(pid, static_cast<pid_t>(std::stoi(t.path().filename().string())));
		const std::string times =
			v.size() > 12 ? v[0] + " utime " + v[11] + " stime " + v[12] : "?";
		/* schedstat: ns on a CPU, ns waiting on a run queue, timeslices; and the CPUs it
		 * may run on: a runnable thread that waits for its CPU shows here */
		std::string cpus;
		{
			std::ifstream st(t.path() / "status");
			for (std::string line; std::getline(st, line);)
				if (line.rfind("Cpus_allowed_list:", 0) == 0) {
					const size_t at = line.find_first_not_of(" \t", 18);
					cpus = at == std::string::npos ? "" : line.substr(at);
				}
		}
		out += "tid " + t.path().filename().string() + " " + slurp("comm") + ": state " +
		       times + ", wchan " + slurp("wchan") + ", syscall " + slurp("syscall") +
		       ", schedstat " + slurp("schedstat") + ", cpus " + cpus + "\n" +
		       slurp("stack") + "\n";
	}
	/* the user-space stacks, where gdb is installed (scripts/setup.sh installs it); not of
	 * a gdb that hangs itself */
	static thread_local bool in_gdb = false;
	if (!in_gdb && access("/usr/bin/gdb", X_OK) == 0) {
		in_gdb = true;
		auto [rc, bt] = run_command({"/usr/bin/gdb", "-q", "-batch", "-nx", "-p",
					     std::to_string(pid), "-ex", "thread apply all bt 30"},
					    std::chrono::seconds(60));
		in_gdb = false;
		out += "---- gdb (exit " + std::to_string(rc) + ") ----\n" + bt;
	}
	return out;
}

std::pair<int, std::string> run_command(std::vector<std::string> argv,
					std::chrono::milliseconds limit)
{
	subprocess p(std::move(argv));
	int rc = p.wait(limit);
	return {rc, p.output()};
}

void expect_refusal(const std::vector<std::string> &argv, int rc, const std::string &want)
{
	std::string line;
	for (const auto &a : argv)
		line += (line.empty() ? "" : " ") + a;
	const auto [got, out] = run_command(argv);
	EXPECT_EQ(got, rc) << line << "\n" << out;
	EXPECT_NE(out.find(want), std::string::npos) << line << "\n" << out;
}

void make_capture(const std::string &path, unsigned count, const char *other_share,
		  capture_counts *counts)
{
	/* single-frame messages (bodies up to 200 B) and non-mesh frames, exactly `count` */
	auto [rc, out] = run_command({bin_path("dpumesh-pcapgen"), "--out", path, "--frames",
				      std::to_string(count), "--messages", std::to_string(count),
				      "--body", "0:200", "--other-share", other_share, "--seed", "7"});
	ASSERT_EQ(rc, 0) << out;
	size_t at = out.find("summary ");
	ASSERT_NE(at, std::string::npos) << out;
	unsigned long frames = 0, bytes = 0, messages = 0;
	ASSERT_EQ(std::sscanf(out.c_str() + at,
			      "summary frames=%lu bytes=%lu messages=%lu valid_messages=%lu "
			      "malformed=%*u other=%lu",
			      &frames, &bytes, &messages, &counts->mesh, &counts->other),
		  5)
		<< out;
	ASSERT_EQ(frames, count) << out;
	ASSERT_EQ(counts->mesh + counts->other, count) << out;
}

std::string bin_path(const std::string &name)
{
	return std::string(DPUMESH_BINARY_DIR) + "/bin/" + name;
}

std::unique_ptr<subprocess> start_pod(const std::vector<std::string> &args,
				      const std::map<std::string, std::string> &env)
{
	std::vector<std::string> a = {bin_path("dpumesh-pod")};
	a.insert(a.end(), args.begin(), args.end());
	for (const auto &[k, v] : env)
		setenv(k.c_str(), v.c_str(), 1);
	auto p = std::make_unique<subprocess>(a);
	for (const auto &[k, v] : env)
		unsetenv(k.c_str());
	return p;
}

temp_dir::temp_dir()
{
	char tmpl[] = "/tmp/dpumesh-test-XXXXXX";
	char *p = mkdtemp(tmpl);
	if (!p)
		throw std::runtime_error("mkdtemp failed");
	_path = p;
}

temp_dir::~temp_dir()
{
	std::error_code ec;
	std::filesystem::remove_all(_path, ec);
}

std::string private_config(const temp_dir &dir, const std::string &rel)
{
	std::stringstream in;
	in << std::ifstream(std::string(DPUMESH_SOURCE_DIR) + "/" + rel).rdbuf();
	std::string cfg = in.str();
	if (cfg.empty())
		throw std::runtime_error("private_config: cannot read " + rel);
	for (auto [from, to] :
	     {std::pair<std::string, std::string>{"/tmp/dpumesh-node1.memif", dir.file("uplink.memif")},
	      {"/tmp/dpumesh-node1.sock", dir.file("ctl.sock")}})
		for (size_t at; (at = cfg.find(from)) != std::string::npos;)
			cfg.replace(at, from.size(), to);
	const std::string out = dir.file("node.json");
	std::ofstream(out) << cfg;
	return out;
}

} // namespace dpumesh::test
