// SPDX-License-Identifier: BSD-3-Clause
// Runs a real process for a test: captures stdout+stderr, sends signals, waits with a limit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dpumesh::test {

class subprocess {
public:
	enum class io {
		pipe, /**< stdout+stderr to one pipe, stdin from /dev/null */
		pty,  /**< stdin, stdout and stderr on a pseudo-terminal (forkpty), as a user's */
	};

	/** Starts argv[0] (a path) with argv; its output is collected from one fd. */
	explicit subprocess(std::vector<std::string> argv, io mode = io::pipe);
	~subprocess(); /* kills and reaps a process still running */
	subprocess(const subprocess &) = delete;
	subprocess &operator=(const subprocess &) = delete;

	pid_t pid() const { return _pid; }

	/** Reads what is available (non-blocking) and returns everything read so far. */
	const std::string &output();

	/** Reads until pred(output) is true or the time is up; returns pred's last value. */
	bool wait_output(const std::function<bool(const std::string &)> &pred,
			 std::chrono::milliseconds limit);

	void signal(int sig);

	/** Writes to the process's terminal (io::pty only): typed keys. */
	bool write(const std::string &keys);

	/**
	 * Waits for exit; returns the exit status (128+sig if killed), or -1 on time-out, and
	 * then output() ends with what each of the process's threads was blocked in
	 * (stacks_of()), so that a test that fails on a hang says where.
	 */
	int wait(std::chrono::milliseconds limit);

private:
	void drain(int timeout_ms);
	pid_t _pid = -1;
	int _fd = -1;
	bool _reaped = false;
	int _status = 0;
	std::string _out;
};

/**
 * What the threads of a running process are blocked in: each thread's name, kernel wait
 * channel and system call from /proc, then `thread apply all bt` from gdb where it is
 * installed. For the failure message of a test whose process did not exit.
 */
std::string stacks_of(pid_t pid);

/** The fields of /proc/PID/task/TID/stat after the command: [0] is field 3 (state), so
 *  field k is [k - 3]. Empty if the thread is gone. */
std::vector<std::string> task_stat(pid_t pid, pid_t tid);

/** Whether the process's main thread has exited while other threads are still torn down. */
bool leader_exited(pid_t pid);

/** Runs a command to completion; returns {exit status, output}. */
std::pair<int, std::string> run_command(std::vector<std::string> argv,
					std::chrono::milliseconds limit = std::chrono::seconds(60));

/** Runs a program that must refuse its arguments: expects exit status `rc` and `want` in its
 *  output (a command line's refusals: the option named, what it wants). */
void expect_refusal(const std::vector<std::string> &argv, int rc, const std::string &want);

/** Mesh and other frames in a capture written by dpumesh-pcapgen. */
struct capture_counts {
	unsigned long mesh = 0, other = 0;
};

/** Writes a capture with dpumesh-pcapgen; asserts on failure (call with ASSERT_NO_FATAL_FAILURE). */
void make_capture(const std::string &path, unsigned count, const char *other_share,
		  capture_counts *counts);

/** Path of a built program: DPUMESH_BINARY_DIR/bin/<name>. */
std::string bin_path(const std::string &name);

/** Starts `dpumesh-pod ARGS` with extra environment variables set for it alone. */
std::unique_ptr<subprocess> start_pod(const std::vector<std::string> &args,
				      const std::map<std::string, std::string> &env = {});

/** A fresh temporary directory, removed by the destructor. */
class temp_dir {
public:
	temp_dir();
	~temp_dir();
	const std::string &path() const { return _path; }
	std::string file(const std::string &name) const { return _path + "/" + name; }

private:
	std::string _path;
};

/**
 * A copy in `dir` of the project's config file `rel` (e.g. "conf/pcap.json") whose fixed
 * paths (the control socket /tmp/dpumesh-node1.sock and the memif socket
 * /tmp/dpumesh-node1.memif) are moved into `dir`, so tests that run at once never share
 * them. Returns the copy's path.
 */
std::string private_config(const temp_dir &dir, const std::string &rel);

} // namespace dpumesh::test
