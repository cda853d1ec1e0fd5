// Helpers shared by tests/test_cli_*.cpp: a temporary folder, running the CLI's entry
// point with captured output, small file helpers and a seeded random source.
#pragma once

#include "cli/cli.hpp"
#include "cli/npy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cli_test {

// A fresh folder under $TMPDIR (or /tmp), removed with its files at destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/uq_cli_test_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") std::remove((path_ + "/" + name).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Names of the files in the folder (to check that nothing stray was left).
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      ::closedir(d);
    }
    return names;
  }

 private:
  std::string path_;
};

struct CliResult {
  int status = -1;
  std::string out, err;
};

inline CliResult run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliResult r;
  r.status = uq::cli::run_cli(args, out, err, false);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Typed .npy writers for test inputs.
inline void save_f32(const std::string& path, const std::vector<std::int64_t>& shape, const std::vector<float>& v) {
  uq::cli::npy::write(path, uq::cli::npy::float32(), shape, v.data());
}
inline void save_u16(const std::string& path, const std::vector<std::int64_t>& shape,
                     const std::vector<std::uint16_t>& v) {
  uq::cli::npy::write(path, uq::cli::npy::uint16(), shape, v.data());
}
inline void save_i32(const std::string& path, const std::vector<std::int64_t>& shape,
                     const std::vector<std::int32_t>& v) {
  uq::cli::npy::write(path, uq::cli::npy::int32(), shape, v.data());
}
inline void save_i64(const std::string& path, const std::vector<std::int64_t>& shape,
                     const std::vector<std::int64_t>& v) {
  uq::cli::npy::write(path, uq::cli::npy::int64(), shape, v.data());
}
inline void save_u8(const std::string& path, const std::vector<std::int64_t>& shape,
                    const std::vector<std::uint8_t>& v) {
  uq::cli::npy::write(path, uq::cli::npy::uint8(), shape, v.data());
}

template <class T>
std::vector<T> load_as(const std::string& path, const char kind, int size) {
  const uq::cli::npy::Array a = uq::cli::npy::read(path);
  EXPECT_TRUE(a.dtype.is(kind, size)) << path << " has dtype " << a.dtype.name();
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  return v;
}

// Heavy-tailed test values: normal with a few large outliers, never all zeros.
inline std::vector<float> random_values(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng) * (u(rng) < 0.02f ? 20.0f : 1.0f);
  return v;
}

// The message a failed command printed must be one line starting "uq <cmd>: ".
inline void expect_one_line_error(const CliResult& r, const std::string& cmd, int status) {
  EXPECT_EQ(r.status, status) << r.err;
  EXPECT_EQ(r.err.rfind("uq " + cmd + ": ", 0), 0u) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
}

// A command line with more options after it: with_options(c.args(dir), {"--k", "8"}).
inline std::vector<std::string> with_options(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// --backend native, which this build may lack a tuned kernel for: either the call ran, never
// on the generic path (true), or it failed with one line naming Backend::Native and left no
// `out_file` (false).
inline bool expect_native_ran_or_refused(const CliResult& r, const std::string& cmd, const std::string& out_file) {
  if (r.status == 0) {
    EXPECT_EQ(r.out.find("path generic"), std::string::npos) << "native must never run the generic path";
    return true;
  }
  expect_one_line_error(r, cmd, 2);
  EXPECT_NE(r.err.find("Backend::Native"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(out_file));
  return false;
}

// Bad data that reaches the device: the call fails (exit 2, one line naming `counter`) and
// leaves no `out_file`. Returns the same call run again with --no-check (then `more_args`),
// whose status and output the caller checks.
inline CliResult run_rejected_then_unchecked(const std::string& cmd, std::vector<std::string> args,
                                             const std::string& counter, const std::string& out_file,
                                             const std::vector<std::string>& more_args = {}) {
  const CliResult rejected = run(args);
  expect_one_line_error(rejected, cmd, 2);
  EXPECT_NE(rejected.err.find(counter), std::string::npos) << rejected.err;
  EXPECT_FALSE(exists(out_file));
  args.push_back("--no-check");
  return run(with_options(args, more_args));
}

}  // namespace cli_test
