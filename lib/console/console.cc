// SPDX-License-Identifier: BSD-3-Clause
// The console machinery: generates librte_cmdline instances from the command table, adds
// a catch-all instance that turns any other line into a one-line error with a hint, and
// runs commands from a terminal or a file.
#include "dpumesh/common/text.h"
#include "dpumesh/console/console.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <new>
#include <stdexcept>

#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>
#include <cmdline_rdline.h>
#include <cmdline_socket.h>

#include "dpumesh/common/log.h"
#include "internal/commands.h"

namespace dpumesh::console {

namespace {

/* Each token's parsed word lands in its own slot of cmdline's result buffer. */
constexpr unsigned slot_size = 256;
constexpr unsigned max_tokens = CMDLINE_PARSE_RESULT_BUFSIZE / slot_size;


/** The catch-all token: matches a whole line that no command matches. */
struct other_token {
	cmdline_parse_token_hdr_t hdr;
	console::impl *self;
};

/**
 * A value token ("<name>" or "<name...>"). cmdline's string tokens copy a word into a
 * 128-byte field and refuse longer ones, so a PEM key or a long RBAC rule could not be
 * typed. A value token copies nothing: its result slot records where the value lies in
 * the line, which cmdline keeps alive until the command's callback has returned.
 */
struct value_token {
	cmdline_parse_token_hdr_t hdr;
	bool rest; /* the rest of the line, blanks included */
};

struct value_ref {
	const char *p;
	size_t len;
};

int value_parse(cmdline_parse_token_hdr_t *tk, const char *buf, void *res, unsigned ressize)
{
	const bool rest = reinterpret_cast<value_token *>(tk)->rest;
	size_t n = 0;
	if (rest) {
		while (buf[n] != '\0' && buf[n] != '\n' && buf[n] != '\r')
			n++;
	} else {
		while (!cmdline_isendoftoken(buf[n]))
			n++;
	}
	size_t len = n;
	while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len == 0 || n > INT32_MAX)
		return -1;
	if (res) {
		if (ressize < sizeof(value_ref))
			return -1;
		value_ref r{buf, len};
		std::memcpy(res, &r, sizeof(r));
	}
	return static_cast<int>(n);
}

int value_help(cmdline_parse_token_hdr_t *tk, char *dst, unsigned size)
{
	std::snprintf(dst, size, "%s", reinterpret_cast<value_token *>(tk)->rest
					       ? "the rest of the line"
					       : "a word");
	return 0;
}

cmdline_token_ops value_ops = [] {
	cmdline_token_ops o{};
	o.parse = &value_parse;
	o.get_help = &value_help;
	return o;
}();

} // namespace

struct console::impl {
	control::node &node;
	std::vector<command_spec> table; /* the shared table as it was when this console was built */
	std::vector<std::vector<syntax_token>> syntaxes; /* per table row */
	std::deque<cmdline_parse_token_string_t> tokens;
	std::deque<value_token> values;
	std::deque<std::string> strings;
	struct bound {
		impl *self;
		const command_spec *spec;
		size_t row;
	};
	std::deque<bound> bounds;
	std::vector<cmdline_parse_inst_t *> insts;
	std::vector<cmdline_parse_ctx_t> ctx;       /* every instance + catch-all, NULL-ended */
	std::vector<cmdline_parse_ctx_t> check_ctx; /* real commands only, NULL-ended */
	cmdline_token_ops other_ops{};
	other_token other{};
	cmdline *checker = nullptr; /* parses against real commands only (catch-all test) */
	cmdline *lines = nullptr;   /* runs lines from files and run_line() */
	cmdline *tty = nullptr;
	std::string where; /* "FILE:LINE: " while running a file */
	status last = status::ok();

	explicit impl(control::node &n);
	~impl();
	void build();
	cmdline_parse_inst_t *new_inst(void (*f)(void *, cmdline *, void *), void *data,
				       const char *help, const std::vector<cmdline_parse_token_hdr_t *> &tk);
	void finish(invocation &inv, status st);
	void report(const std::string &msg);
	std::string explain(const std::string &line) const;

	static void on_command(void *res, cmdline *cl, void *data);
	static void on_other(void *res, cmdline *cl, void *data);
	static int other_parse(cmdline_parse_token_hdr_t *tk, const char *buf, void *res,
			       unsigned ressize);
	static int other_help(cmdline_parse_token_hdr_t *, char *dst, unsigned size);
};

console::impl::impl(control::node &n) : node(n) { build(); }

console::impl::~impl()
{
	if (tty)
		cmdline_stdin_exit(tty);
	if (checker)
		cmdline_free(checker);
	if (lines)
		cmdline_free(lines);
	for (cmdline_parse_inst_t *i : insts)
		std::free(i);
}

cmdline_parse_inst_t *console::impl::new_inst(void (*f)(void *, cmdline *, void *), void *data,
					      const char *help,
					      const std::vector<cmdline_parse_token_hdr_t *> &tk)
{
	/* cmdline_parse_inst_t ends with a flexible array of token pointers (NULL-ended) */
	size_t sz = sizeof(cmdline_parse_inst_t) + (tk.size() + 1) * sizeof(void *);
	auto *inst = static_cast<cmdline_parse_inst_t *>(std::calloc(1, sz));
	if (!inst)
		throw std::bad_alloc();
	inst->f = f;
	inst->data = data;
	inst->help_str = help;
	for (size_t i = 0; i < tk.size(); i++)
		inst->tokens[i] = tk[i];
	inst->tokens[tk.size()] = nullptr;
	insts.push_back(inst);
	return inst;
}

void console::impl::build()
{
	auto rows = commands();
	table.assign(rows.begin(), rows.end());
	if (std::string clash = first_overlap(table); !clash.empty())
		throw std::logic_error("console: command rows overlap: " + clash);
	for (size_t row = 0; row < table.size(); row++) {
		syntaxes.push_back(parse_syntax(table[row].syntax));
		const auto &syn = syntaxes.back();
		if (syn.size() > max_tokens)
			throw std::logic_error(std::string("console: too many tokens in ") +
					       table[row].syntax);
		std::vector<cmdline_parse_token_hdr_t *> tk;
		for (size_t i = 0; i < syn.size(); i++) {
			const unsigned offset = static_cast<unsigned>(i * slot_size);
			if (syn[i].choices.empty()) {
				if (syn[i].rest && i + 1 != syn.size())
					throw std::logic_error(std::string("console: a <...> token must "
									   "be the last one: ") +
							       table[row].syntax);
				value_token v{};
				v.hdr.ops = &value_ops;
				v.hdr.offset = offset;
				v.rest = syn[i].rest;
				values.push_back(v);
				tk.push_back(&values.back().hdr);
				continue;
			}
			cmdline_parse_token_string_t t{};
			t.hdr.ops = &cmdline_token_string_ops;
			t.hdr.offset = offset;
			std::string str;
			for (const std::string &c : syn[i].choices)
				str += (str.empty() ? "" : "#") + c; /* cmdline's choice separator */
			strings.push_back(str);
			t.string_data.str = strings.back().c_str();
			tokens.push_back(t);
			tk.push_back(&tokens.back().hdr);
		}
		strings.push_back(std::string(table[row].syntax) + ": " + table[row].help);
		bounds.push_back({this, &table[row], row});
		ctx.push_back(new_inst(&on_command, &bounds.back(), strings.back().c_str(), tk));
	}
	check_ctx = ctx;
	check_ctx.push_back(nullptr);

	other_ops.parse = &other_parse;
	other_ops.get_help = &other_help;
	other.hdr.ops = &other_ops;
	other.hdr.offset = 0;
	other.self = this;
	ctx.push_back(new_inst(&on_other, this, "any other line: an error with a hint",
			       {&other.hdr}));
	ctx.push_back(nullptr);

	checker = cmdline_new(check_ctx.data(), "", -1, -1);
	lines = cmdline_new(ctx.data(), "", -1, STDOUT_FILENO);
	if (!checker || !lines)
		throw std::bad_alloc();
}

void console::impl::report(const std::string &msg)
{
	std::fprintf(stdout, "%s%s\n", where.c_str(), msg.c_str());
	std::fflush(stdout);
}

void console::impl::finish(invocation &inv, status st)
{
	if (!inv.out.empty()) {
		std::fwrite(inv.out.data(), 1, inv.out.size(), stdout);
		std::fflush(stdout);
	}
	if (!st.is_ok()) {
		const std::string &m = st.message();
		bool plain = m.rfind("Bad arguments", 0) == 0 || m.rfind("unknown command", 0) == 0;
		report(plain ? m : "error: " + m);
	}
	if (inv.quit)
		node.quit.store(true);
	last = st;
}

void console::impl::on_command(void *res, cmdline *, void *data)
{
	auto *b = static_cast<bound *>(data);
	const command_spec *spec = b->spec;
	impl *self = b->self;
	invocation inv{self->node, {}, {}, false};
	const std::vector<syntax_token> &syn = self->syntaxes[b->row];
	for (size_t i = 0; i < syn.size(); i++) {
		const char *w = static_cast<const char *>(res) + i * slot_size;
		if (syn[i].choices.empty()) {
			value_ref r;
			std::memcpy(&r, w, sizeof(r));
			inv.words.emplace_back(r.p, r.len);
		} else {
			inv.words.emplace_back(w, strnlen(w, slot_size));
		}
	}
	status st = status::ok();
	try {
		st = spec->run(inv);
	} catch (const std::exception &e) {
		st = errorf("%s: %s", spec->syntax, e.what());
	}
	self->finish(inv, st);
}

int console::impl::other_parse(cmdline_parse_token_hdr_t *tk, const char *buf, void *res,
			       unsigned ressize)
{
	if (!res)
		return -1; /* never offered by completion */
	impl *self = reinterpret_cast<other_token *>(tk)->self;
	size_t len = 0;
	while (buf[len] && buf[len] != '\n' && buf[len] != '\r' && buf[len] != '#')
		len++;
	std::string line(buf, len);
	line += '\n';
	if (cmdline_parse_check(self->checker, line.c_str()) > 0)
		return -1; /* a real command matches: let it run */
	size_t n = std::min<size_t>(len, ressize - 1);
	std::memcpy(res, buf, n);
	static_cast<char *>(res)[n] = '\0';
	return static_cast<int>(len);
}

int console::impl::other_help(cmdline_parse_token_hdr_t *, char *dst, unsigned size)
{
	std::snprintf(dst, size, "anything else");
	return 0;
}

void console::impl::on_other(void *res, cmdline *, void *data)
{
	auto *self = static_cast<impl *>(data);
	std::string line(static_cast<const char *>(res));
	invocation inv{self->node, {}, {}, false};
	self->finish(inv, status::error(self->explain(line)));
}

/** Why a line matches no command, with a hint: the closest command or the expected words. */
std::string console::impl::explain(const std::string &line) const
{
	std::vector<std::string> words = split_words(line);
	size_t best = 0;
	for (const auto &syn : syntaxes) {
		size_t m = 0;
		while (m < syn.size() && m < words.size() && syn[m].matches(words[m]))
			m++;
		best = std::max(best, m);
	}
	if (best == 0) {
		std::string guess;
		size_t dist = 3;
		for (const auto &syn : syntaxes)
			for (const std::string &c : syn[0].choices) {
				size_t d = edit_distance(words[0], c);
				if (c.rfind(words[0], 0) == 0)
					d = 0;
				if (d < dist) {
					dist = d;
					guess = c;
				}
			}
		std::string msg = "unknown command \"" + words[0] + "\"";
		if (!guess.empty())
			msg += "; did you mean \"" + guess + "\"?";
		return msg + " (type 'help' for the list)";
	}
	std::vector<size_t> rows;
	for (size_t r = 0; r < syntaxes.size(); r++) {
		size_t m = 0;
		while (m < syntaxes[r].size() && m < words.size() && syntaxes[r][m].matches(words[m]))
			m++;
		if (m == best)
			rows.push_back(r);
	}
	if (rows.size() == 1)
		return std::string("Bad arguments: usage: ") + table[rows[0]].syntax;
	std::string after, expected;
	for (size_t i = 0; i < best; i++)
		after += (i ? " " : "") + words[i];
	std::vector<std::string> seen;
	for (size_t r : rows) {
		if (syntaxes[r].size() <= best)
			continue;
		const std::string &t = syntaxes[r][best].text;
		if (std::find(seen.begin(), seen.end(), t) != seen.end())
			continue;
		seen.push_back(t);
		expected += (expected.empty() ? "" : ", ") + t;
	}
	if (expected.empty())
		return "Bad arguments: \"" + after + "\" takes no further words";
	return "Bad arguments: after \"" + after + "\" expected one of: " + expected +
	       " (see 'help " + words[0] + "')";
}

/* ---- public ---- */

console::console(control::node &n) : _impl(std::make_unique<impl>(n)) {}

console::~console() = default;

status console::run_line(std::string_view text)
{
	_impl->last = status::ok();
	if (text.size() > max_line_bytes) {
		invocation inv{_impl->node, {}, {}, false};
		_impl->finish(inv, errorf("line of %zu bytes is longer than the console takes "
					  "(%zu bytes); nothing was run",
					  text.size(), max_line_bytes));
		return _impl->last;
	}
	std::string line(text);
	line += '\n';
	int rc = cmdline_parse(_impl->lines, line.c_str());
	if (rc < 0) { /* cannot happen with the catch-all, but never stay silent */
		invocation inv{_impl->node, {}, {}, false};
		_impl->finish(inv, errorf("cannot parse \"%.*s\" (cmdline error %d)",
					  static_cast<int>(text.size()), text.data(), rc));
	}
	return _impl->last;
}

namespace {

/* A line longer than the console takes is read on, without being kept, up to this many
 * bytes, to say how long it was; past that the file is not read further (a file of one
 * line without end, such as /dev/zero, must not be read, nor held, forever). */
constexpr size_t max_skipped_line_bytes = 16u << 20;

enum class line_read { line, end, too_long, no_end };

/* The next line of `sb` without its '\n' (and a '\r' before it) into `line`, its length
 * in `length`. too_long: longer than max_line_bytes (`line` holds its first bytes, `length`
 * all of them); no_end: past max_skipped_line_bytes, the rest unread. */
line_read read_line(std::streambuf &sb, std::string &line, size_t &length)
{
	constexpr int eof = std::char_traits<char>::eof();
	line.clear();
	length = 0;
	int c = sb.sbumpc();
	if (c == eof)
		return line_read::end;
	int last = 0;
	for (; c != eof && c != '\n'; c = sb.sbumpc()) {
		if (++length > max_skipped_line_bytes)
			return line_read::no_end;
		if (line.size() <= max_line_bytes) /* one more: a '\r' before the '\n' */
			line.push_back(static_cast<char>(c));
		last = c;
	}
	if (last == '\r') {
		length--;
		if (line.size() > length)
			line.pop_back();
	}
	return length > max_line_bytes ? line_read::too_long : line_read::line;
}

} // namespace

result<unsigned> console::run_file(const std::string &path)
{
	std::ifstream in(path);
	if (!in)
		return errorf("--cmdline-file %s: %s", path.c_str(), std::strerror(errno));
	std::string line;
	size_t length = 0;
	unsigned lineno = 0, nb_failed = 0, nb_run = 0;
	for (line_read got; (got = read_line(*in.rdbuf(), line, length)) != line_read::end;) {
		lineno++;
		std::vector<std::string> w = split_words(line);
		/* blank lines and comments (a long one's rest is not looked at); a long line whose
		 * first bytes are blank is still an error */
		if (w.empty() ? got == line_read::line : w[0][0] == '#')
			continue;
		_impl->where = path + ":" + std::to_string(lineno) + ": ";
		if (got == line_read::line) {
			std::printf("%s%s\n", prompt, line.c_str());
			std::fflush(stdout);
			if (!run_line(line).is_ok())
				nb_failed++;
		} else {
			/* its first bytes echoed, not all of it */
			std::printf("%s%.*s ...\n", prompt, 64, line.c_str());
			std::fflush(stdout);
			std::string m;
			if (got == line_read::too_long)
				appendf(m, "error: line of %zu bytes is longer than the console takes "
					   "(%zu bytes); nothing was run",
					length, max_line_bytes);
			else
				appendf(m, "error: line of more than %zu bytes; nothing was run, and "
					   "the rest of the file is not read",
					max_skipped_line_bytes);
			_impl->report(m);
			nb_failed++;
		}
		_impl->where.clear();
		nb_run++;
		if (got == line_read::no_end || _impl->node.quit.load())
			break;
	}
	std::printf("dpumesh: %s: %u command(s), %u failed\n", path.c_str(), nb_run, nb_failed);
	std::fflush(stdout);
	return nb_failed;
}

status console::open_interactive()
{
	if (_impl->tty)
		return status::ok();
	_impl->tty = cmdline_stdin_new(_impl->ctx.data(), prompt);
	if (!_impl->tty)
		return errorf("console: cannot open the terminal");
	return status::ok();
}

bool console::poll(int timeout_ms)
{
	if (!_impl->tty)
		return false;
	pollfd p{STDIN_FILENO, POLLIN, 0};
	int rc = ::poll(&p, 1, timeout_ms);
	if (rc <= 0)
		return !_impl->node.quit.load();
	char buf[256];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	if (n <= 0) { /* end of input: as `quit` */
		std::printf("\n");
		_impl->node.quit.store(true);
		return false;
	}
	if (cmdline_in(_impl->tty, buf, static_cast<int>(n)) < 0) /* Ctrl-D */
		_impl->node.quit.store(true);
	return !_impl->node.quit.load();
}

void console::print_async(const std::string &text)
{
	if (!_impl->tty) {
		std::fputs(text.c_str(), stdout);
		std::fflush(stdout);
		return;
	}
	const bool term = isatty(STDOUT_FILENO);
	if (term)
		std::fputs("\r\x1b[2K", stdout); /* clear the prompt line, print, then redraw it */
	else
		std::fputs("\n", stdout);
	std::fputs(text.c_str(), stdout);
	std::fflush(stdout);
	rdline_redisplay(cmdline_get_rdline(_impl->tty));
}

void console::close_interactive()
{
	if (_impl->tty) {
		/* the prompt drawn after the last command */
		std::fputs(isatty(STDOUT_FILENO) ? "\r\x1b[2K" : "\n", stdout);
		std::fflush(stdout);
		cmdline_stdin_exit(_impl->tty);
		_impl->tty = nullptr;
	}
}

} // namespace dpumesh::console
