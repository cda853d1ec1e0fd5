// How the uq program writes its outputs (src/cli/output_file.hpp states the rules; the
// README's command table and `uq --help` repeat them): a regular file is replaced
// atomically and keeps its mode, a symbolic link's target is written, a FIFO or a
// character device is written through, what the user could not open for writing is
// refused with exit 1, and an interrupted write (SIGINT, SIGTERM, SIGHUP) leaves no
// temporary file behind.
#include "cli/cli_test_support.hpp"
#include "cli/program_runner.hpp"

#include "cli/output_file.hpp"
#include "cli/temp_files.hpp"

#include "uqref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <thread>

#include <sys/sysmacros.h>

using namespace cli_test;
namespace npy = uq::cli::npy;

namespace {

constexpr int D = 256;

// A rotate-q input and the bytes its output must have (written once to a fresh path).
struct RotateCase {
  std::string q;
  std::string want;  // the bytes of the output file
  explicit RotateCase(const TempDir& dir) : q(dir.file("q.npy")) {
    save_f32(q, {3, D}, random_values(3 * D, 31));
    const CliResult r = run({"rotate-q", "--q", q, "--out", dir.file("reference_out.npy")});
    EXPECT_EQ(r.status, 0) << r.err;
    want = read_bytes(dir.file("reference_out.npy"));
    std::remove(dir.file("reference_out.npy").c_str());
    EXPECT_GT(want.size(), std::size_t(3 * D * 4));
  }
  std::vector<std::string> args(const std::string& out) const { return {"rotate-q", "--q", q, "--out", out}; }
};

mode_t mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// The folder holds exactly these names (no temporary left).
void expect_files(const TempDir& dir, std::vector<std::string> want) {
  std::vector<std::string> got = dir.list();
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

const std::string kPoison = "not the output";

TEST(CliOutputFiles, ReplacesARegularFileAtomicallyKeepingItsMode) {
  TempDir dir;
  const RotateCase c(dir);
  for (mode_t mode : {mode_t(0600), mode_t(0640), mode_t(0604)}) {
    const std::string out = dir.file("out.npy");
    write_bytes(out, kPoison);
    ASSERT_EQ(::chmod(out.c_str(), mode), 0);
    const CliResult r = run(c.args(out));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(read_bytes(out), c.want);
    EXPECT_EQ(mode_of(out), mode) << "the replaced file keeps its permission bits";
    expect_files(dir, {"q.npy", "out.npy"});
  }
  // A new file gets 0666 less the umask, as a plain open() would give it.
  const mode_t mask = ::umask(027);
  const CliResult r = run(c.args(dir.file("new.npy")));
  ::umask(mask);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(mode_of(dir.file("new.npy")), mode_t(0640));
  EXPECT_EQ(read_bytes(dir.file("new.npy")), c.want);
}

TEST(CliOutputFiles, FollowsSymbolicLinksAndWritesTheirTarget) {
  TempDir dir;
  const RotateCase c(dir);
  // A relative link to an existing private file, through a second link.
  write_bytes(dir.file("real.npy"), kPoison);
  ASSERT_EQ(::chmod(dir.file("real.npy").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("real.npy", dir.file("link1.npy").c_str()), 0);
  ASSERT_EQ(::symlink(dir.file("link1.npy").c_str(), dir.file("link2.npy").c_str()), 0);
  CliResult r = run(c.args(dir.file("link2.npy")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_bytes(dir.file("real.npy")), c.want);
  EXPECT_EQ(mode_of(dir.file("real.npy")), mode_t(0600));
  struct stat lst;
  ASSERT_EQ(::lstat(dir.file("link2.npy").c_str(), &lst), 0);
  EXPECT_TRUE(S_ISLNK(lst.st_mode)) << "the link stays a link";
  ASSERT_EQ(::lstat(dir.file("link1.npy").c_str(), &lst), 0);
  EXPECT_TRUE(S_ISLNK(lst.st_mode));
  // A dangling link: its target is created, the link kept.
  ASSERT_EQ(::symlink("made.npy", dir.file("dangling.npy").c_str()), 0);
  r = run(c.args(dir.file("dangling.npy")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_bytes(dir.file("made.npy")), c.want);
  ASSERT_EQ(::lstat(dir.file("dangling.npy").c_str(), &lst), 0);
  EXPECT_TRUE(S_ISLNK(lst.st_mode));
  expect_files(dir, {"q.npy", "real.npy", "link1.npy", "link2.npy", "dangling.npy", "made.npy"});
}

TEST(CliOutputFiles, WritesThroughAFifo) {
  TempDir dir;
  const RotateCase c(dir);
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[65536];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    if (fd >= 0) ::close(fd);
  });
  const CliResult r = run(c.args(fifo));
  reader.join();
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(got, c.want) << "the reader gets the whole .npy file";
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO is still a FIFO";
  expect_files(dir, {"q.npy", "pipe"});
}

TEST(CliOutputFiles, WritesThroughACharacterDevice) {
  TempDir dir;
  const RotateCase c(dir);
  // As root, a private node of the null device (replacing it must not touch the
  // system's /dev/null); otherwise /dev/null itself.
  std::string node = "/dev/null";
  if (running_as_root()) {
    node = dir.file("null");
    ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  }
  const CliResult r = run(c.args(node));
  ASSERT_EQ(r.status, 0) << r.err;
  struct stat st;
  ASSERT_EQ(::lstat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << node << " was replaced";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  if (running_as_root()) expect_files(dir, {"q.npy", "null"});
  else expect_files(dir, {"q.npy"});
}

TEST(CliOutputFiles, TheProgramsStandardOutputGetsTheArrayAndStderrTheSummary) {
  TempDir dir;
  const RotateCase c(dir);
  const std::string cmd = std::string("'") + UQ_CLI_PROGRAM + "' rotate-q --q '" + c.q +
                          "' --out /dev/stdout 2>'" + dir.file("err.txt") + "' | cat >'" + dir.file("got.npy") + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_bytes(dir.file("got.npy")), c.want) << "nothing but the array on stdout";
  EXPECT_NE(read_bytes(dir.file("err.txt")).find("uq rotate-q: wrote /dev/stdout"), std::string::npos);
}

TEST(CliOutputFiles, RefusesDirectoriesAndWhatTheUserCouldNotOpenForWriting) {
  TempDir dir;
  const RotateCase c(dir);
  give_to_unprivileged(dir.file(""));
  // A directory.
  ASSERT_EQ(::mkdir(dir.file("folder").c_str(), 0755), 0);
  CliResult r = run(c.args(dir.file("folder")));
  expect_one_line_error(r, "rotate-q", 1);
  EXPECT_NE(r.err.find("cannot write: it is a directory"), std::string::npos) << r.err;

  // A read-only file in a folder the user may write: a plain open() fails, so must uq
  // (replacing it through the folder would bypass the file's own permission).
  const std::string ro = dir.file("ro.npy");
  write_bytes(ro, kPoison);
  give_to_unprivileged(ro);
  ASSERT_EQ(::chmod(ro.c_str(), 0444), 0);
  r = run_unprivileged(c.args(ro));
  expect_one_line_error(r, "rotate-q", 1);
  EXPECT_NE(r.err.find(ro + ": cannot write: Permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(ro), kPoison);
  EXPECT_EQ(mode_of(ro), mode_t(0444));
  // The same file through a symbolic link.
  ASSERT_EQ(::symlink("ro.npy", dir.file("ro_link.npy").c_str()), 0);
  r = run_unprivileged(c.args(dir.file("ro_link.npy")));
  expect_one_line_error(r, "rotate-q", 1);
  EXPECT_EQ(read_bytes(ro), kPoison);
  if (running_as_root()) {
    // Root may open it for writing: then uq writes it, and it stays read-only.
    r = run(c.args(ro));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(read_bytes(ro), c.want);
    EXPECT_EQ(mode_of(ro), mode_t(0444));
  }

  // A writable file in a folder where the temporary cannot be created.
  ASSERT_EQ(::mkdir(dir.file("locked").c_str(), 0755), 0);
  give_to_unprivileged(dir.file("locked"));
  const std::string inner = dir.file("locked") + "/out.npy";
  write_bytes(inner, kPoison);
  give_to_unprivileged(inner);
  ASSERT_EQ(::chmod(dir.file("locked").c_str(), 0555), 0);
  r = run_unprivileged(c.args(inner));
  expect_one_line_error(r, "rotate-q", 1);
  EXPECT_NE(r.err.find("cannot create a temporary file in '" + dir.file("locked") + "'"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(inner), kPoison);
  ASSERT_EQ(::chmod(dir.file("locked").c_str(), 0755), 0);
  std::remove(inner.c_str());
  std::remove(dir.file("locked").c_str());
  std::remove(dir.file("folder").c_str());
  expect_files(dir, {"q.npy", "ro.npy", "ro_link.npy"});
}

TEST(CliOutputFiles, AReadOnlyCacheIsNotUpdated) {
  TempDir dir;
  give_to_unprivileged(dir.file(""));
  save_f32(dir.file("k.npy"), {1, 1, D}, random_values(D, 41));
  save_f32(dir.file("v.npy"), {1, 1, D}, random_values(D, 42));
  save_i64(dir.file("slots.npy"), {1}, {3});
  save_u8(dir.file("cache.npy"), {1, 16, 1, 272}, std::vector<std::uint8_t>(16 * 272, 7));
  give_to_unprivileged(dir.file("cache.npy"));
  ASSERT_EQ(::chmod(dir.file("cache.npy").c_str(), 0444), 0);
  const std::string before = read_bytes(dir.file("cache.npy"));
  const CliResult r = run_unprivileged({"write-kv", "--k", dir.file("k.npy"), "--v", dir.file("v.npy"), "--slots",
                                        dir.file("slots.npy"), "--cache", dir.file("cache.npy")});
  expect_one_line_error(r, "write-kv", 1);
  EXPECT_NE(r.err.find("cannot open for an in-place update: Permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.file("cache.npy")), before);
  EXPECT_EQ(mode_of(dir.file("cache.npy")), mode_t(0444));
}

// ------------------------------------------------------------------ signals
// select with a large --k writes a large, mostly padding output from tiny inputs: long
// enough (tens of milliseconds at least) to catch the program with its temporary open.
struct LargeOutputCase {
  explicit LargeOutputCase(const TempDir& dir) {
    save_f32(dir.file("scores.npy"), {1, 2, 3}, {0.5f, -1.0f, 2.0f, 1.0f, 3.0f, -2.0f});
    save_i32(dir.file("sl.npy"), {2}, {300, 200});
  }
  std::vector<std::string> args(const TempDir& dir, std::int64_t k) const {
    return {"select", "--scores", dir.file("scores.npy"), "--seq-lens", dir.file("sl.npy"), "--query-len", "1",
            "--out", dir.file("out.npy"), "--k", std::to_string(k)};
  }
};

// Whether the child has ended (without reaping it).
bool finished(pid_t pid) {
  siginfo_t info;
  info.si_pid = 0;
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Names in `dir` that are neither the inputs nor the child's captured output.
std::vector<std::string> new_names(const TempDir& dir, const std::vector<std::string>& known) {
  std::vector<std::string> names;
  for (const std::string& n : dir.list())
    if (n.rfind(".child_", 0) != 0 && std::find(known.begin(), known.end(), n) == known.end()) names.push_back(n);
  return names;
}

TEST(CliOutputFiles, AnInterruptedWriteLeavesNoTemporaryAndTheOldOutput) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE("signal " + std::to_string(sig));
    TempDir dir;
    const LargeOutputCase c(dir);
    write_bytes(dir.file("out.npy"), kPoison);  // an older output, which must survive
    const std::vector<std::string> known = {"scores.npy", "sl.npy", "out.npy"};
    bool caught = false;
    // 64 MiB of output first; larger if the program was too quick to be caught.
    for (std::int64_t k = std::int64_t(1) << 23; k <= (std::int64_t(1) << 26) && !caught; k *= 2) {
      const pid_t pid = spawn_uq(dir, c.args(dir, k));
      ASSERT_GT(pid, 0);
      bool seen = false;
      for (int i = 0; i < 20000000 && !seen; ++i) {
        if (!new_names(dir, known).empty()) seen = true;
        else if (finished(pid)) break;  // too quick: try a larger output
      }
      if (seen) ::kill(pid, sig);
      const ChildResult r = wait_uq(dir, pid);
      if (seen && !r.exited) {
        caught = true;
        EXPECT_EQ(r.signal, sig) << "the program ends with the signal it got";
      } else {
        ASSERT_TRUE(r.exited) << "ended by signal " << r.signal << ": " << r.err;
        ASSERT_EQ(r.status, 0) << r.err;
        write_bytes(dir.file("out.npy"), kPoison);
      }
      EXPECT_TRUE(new_names(dir, known).empty()) << "left behind: " << new_names(dir, known)[0];
    }
    EXPECT_TRUE(caught) << "the program was never caught while writing";
    EXPECT_EQ(read_bytes(dir.file("out.npy")), kPoison) << "an interrupted write keeps the old output";
  }
}

// The same mechanism without timing: a child process opens an output, writes part of
// it and raises the signal itself.
int signal_ending_child(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    uq::cli::install_signal_cleanup();
    body();
    ::_exit(0);
  }
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  return WIFSIGNALED(raw) ? WTERMSIG(raw) : -WEXITSTATUS(raw);
}

TEST(CliOutputFiles, TheSignalHandlerRemovesTheTemporaryAndEndsWithTheSignal) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    TempDir dir;
    const int got = signal_ending_child([&] {
      uq::cli::OutputFile out(dir.file("out.npy"), 100, "a test output");
      out.write("partial", 7);
      ::raise(sig);
    });
    EXPECT_EQ(got, sig);
    EXPECT_TRUE(dir.list().empty()) << "left behind: " << dir.list()[0];
  }
}

TEST(CliOutputFiles, SignalsWaitUntilAnInPlaceUpdateEnds) {
  TempDir dir;
  const int got = signal_ending_child([&] {
    {
      const uq::cli::SignalHold hold;
      ::raise(SIGTERM);
      write_bytes(dir.file("after_raise"), "the update went on");  // still running: the signal waits
    }
    write_bytes(dir.file("after_hold"), "must not happen");  // the held signal ends it first
  });
  EXPECT_EQ(got, SIGTERM);
  EXPECT_TRUE(exists(dir.file("after_raise")));
  EXPECT_FALSE(exists(dir.file("after_hold")));
}

}  // namespace
