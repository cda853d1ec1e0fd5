// Running the built uq program (UQ_CLI_PROGRAM) as a child process without a shell:
// its exit status or the signal that ended it, its peak resident memory, and what it
// printed; or running the CLI's entry point in a child process as an unprivileged
// user (when the tests run as root, so that permission checks are real).
#pragma once

#include "cli/cli_test_support.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_program_path.hpp"  // UQ_CLI_PROGRAM: the built program, from tests/CMakeLists.txt

namespace cli_test {

struct ChildResult {
  bool exited = false;    // false: ended by a signal
  int status = -1;        // the exit status when exited
  int signal = 0;         // the signal that ended it otherwise
  long max_rss_kib = -1;  // peak resident set size
  std::string out, err;
};

// Starts `program args...` with stdout and stderr in files of `dir` and stdin
// /dev/null. The signals the uq program cleans up after are reset to their defaults
// in the child (a test runner may ignore some, and an ignored signal stays ignored
// across exec).
inline pid_t spawn_program(const TempDir& dir, const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  const std::string out = dir.file(".child_stdout"), err = dir.file(".child_stderr");
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Starts `uq args...` itself (its pid is the program's: for signals).
inline pid_t spawn_uq(const TempDir& dir, const std::vector<std::string>& args) {
  return spawn_program(dir, UQ_CLI_PROGRAM, args);
}

// Waits for a child started by spawn_uq and collects what it left (removing its
// output files, so `dir` lists only what the program wrote).
inline ChildResult wait_uq(const TempDir& dir, pid_t pid) {
  ChildResult r;
  int raw = 0;
  struct rusage use {};
  if (::wait4(pid, &raw, 0, &use) != pid) return r;
  r.exited = WIFEXITED(raw);
  r.status = r.exited ? WEXITSTATUS(raw) : -1;
  r.signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
  r.max_rss_kib = use.ru_maxrss;
  r.out = read_bytes(dir.file(".child_stdout"));
  r.err = read_bytes(dir.file(".child_stderr"));
  std::remove(dir.file(".child_stdout").c_str());
  std::remove(dir.file(".child_stderr").c_str());
  return r;
}

// Peak memory needs a fresh process: a child forked from the test program starts with
// the test's resident pages (ru_maxrss counts them, until and after exec), so the
// program is started by a small helper instead, this same test binary re-executed
// with UQ_TEST_RSS_HELPER set, which before main() forks the program, waits for it
// and writes "exited status signal max_rss_kib" to the file the variable names.
inline bool rss_helper_hook() {
  const char* result_file = std::getenv("UQ_TEST_RSS_HELPER");
  if (!result_file) return false;
  std::string cmdline;
  const int fd = ::open("/proc/self/cmdline", O_RDONLY);
  char buf[4096];
  for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;) cmdline.append(buf, static_cast<std::size_t>(n));
  std::vector<std::string> words;
  for (std::size_t start = 0; start < cmdline.size();) {
    const std::size_t end = cmdline.find('\0', start);
    words.push_back(cmdline.substr(start, end - start));
    start = end == std::string::npos ? cmdline.size() : end + 1;
  }
  std::vector<char*> argv;
  for (std::size_t i = 1; i < words.size(); ++i) argv.push_back(&words[i][0]);  // words[0]: this binary
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int raw = 0;
  struct rusage use {};
  const bool waited = pid > 0 && ::wait4(pid, &raw, 0, &use) == pid;
  const std::string line = std::to_string(waited && WIFEXITED(raw) ? 1 : 0) + " " +
                           std::to_string(waited && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1) + " " +
                           std::to_string(waited && WIFSIGNALED(raw) ? WTERMSIG(raw) : 0) + " " +
                           std::to_string(waited ? use.ru_maxrss : -1) + "\n";
  const int out = ::open(result_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out >= 0) {
    (void)!::write(out, line.data(), line.size());
    ::close(out);
  }
  ::_exit(0);
}
inline const bool kRssHelperRan = rss_helper_hook();

// Runs `uq args...` to completion through the helper: ChildResult with max_rss_kib.
inline ChildResult run_uq(const TempDir& dir, const std::vector<std::string>& args) {
  const std::string result_file = dir.file(".child_result");
  ::setenv("UQ_TEST_RSS_HELPER", result_file.c_str(), 1);
  std::vector<std::string> helper_args = {UQ_CLI_PROGRAM};
  helper_args.insert(helper_args.end(), args.begin(), args.end());
  const pid_t pid = spawn_program(dir, "/proc/self/exe", helper_args);
  ::unsetenv("UQ_TEST_RSS_HELPER");
  ChildResult r = wait_uq(dir, pid);
  const std::string line = read_bytes(result_file);
  std::remove(result_file.c_str());
  int exited = 0;
  if (std::sscanf(line.c_str(), "%d %d %d %ld", &exited, &r.status, &r.signal, &r.max_rss_kib) != 4) {
    ADD_FAILURE() << "the helper that runs uq reported nothing";
    return ChildResult{};
  }
  r.exited = exited != 0;
  return r;
}

// The last line of a program's stderr (Kokkos may print advice before it).
inline std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const std::size_t start = t.rfind('\n');
  return start == std::string::npos ? t : t.substr(start + 1);
}

// The user the permission tests run as: the tests' own user, or "nobody" (65534) when
// they run as root (root may open any file, so nothing would be refused).
constexpr uid_t kUnprivilegedId = 65534;
inline bool running_as_root() { return ::geteuid() == 0; }

// Makes `path` (a file or folder the test created) belong to the unprivileged user.
inline void give_to_unprivileged(const std::string& path) {
  if (running_as_root()) ASSERT_EQ(::chown(path.c_str(), kUnprivilegedId, kUnprivilegedId), 0) << path;
}

// Runs the CLI's entry point (run_cli) as the unprivileged user, in a child process
// when the tests run as root: what a non-root user running `uq` would get.
inline CliResult run_unprivileged(const std::vector<std::string>& args) {
  if (!running_as_root()) return run(args);
  int fds[2];
  if (::pipe(fds) != 0) return CliResult{};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    int ok = ::setgroups(0, nullptr) == 0 && ::setgid(kUnprivilegedId) == 0 && ::setuid(kUnprivilegedId) == 0;
    CliResult r;
    if (ok) r = run(args);
    const std::string msg = std::to_string(ok ? r.status : 125) + "\n" + (ok ? r.err : "cannot drop privileges\n");
    (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  CliResult r;
  const std::size_t nl = msg.find('\n');
  if (nl == std::string::npos) return r;
  r.status = std::stoi(msg.substr(0, nl));
  r.err = msg.substr(nl + 1);
  return r;
}

}  // namespace cli_test
