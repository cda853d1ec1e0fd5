// The built `uq` program end to end (its path comes from CMake as UQ_CLI_PROGRAM):
// Kokkos set-up around the dispatcher, exit statuses as a shell sees them, no crash on
// a corrupted file, and write-kv -> decode through files, the way a Python user runs it.
#include "cli/cli_test_support.hpp"
#include "cli/numpy_fixtures.hpp"

#include "uqref.hpp"
#include "support/reference_inputs.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include <sys/wait.h>

#include "cli_program_path.hpp"  // UQ_CLI_PROGRAM: the built program, from tests/CMakeLists.txt

using namespace cli_test;

namespace {

struct ProgramResult {
  bool exited = false;  // false: killed by a signal
  int status = -1;
  std::string out, err;
};

// The last line of a program's stderr (Kokkos may print advice before it, e.g.
// OpenMP's OMP_PROC_BIND warning, which the program moves from stdout to stderr).
std::string last_line(const std::string& text) {
  const std::size_t end = text.size() && text.back() == '\n' ? text.size() - 1 : text.size();
  const std::size_t start = text.rfind('\n', end ? end - 1 : 0);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1));
}

ProgramResult run_program(const TempDir& dir, const std::string& args) {
  const std::string cmd = std::string("'") + UQ_CLI_PROGRAM + "' " + args + " >'" + dir.file("stdout") + "' 2>'" +
                          dir.file("stderr") + "' </dev/null";
  const int raw = std::system(cmd.c_str());
  ProgramResult r;
  r.exited = raw != -1 && WIFEXITED(raw);
  r.status = r.exited ? WEXITSTATUS(raw) : -1;
  r.out = read_bytes(dir.file("stdout"));
  r.err = read_bytes(dir.file("stderr"));
  return r;
}

}  // namespace

TEST(CliProgram, HelpVersionAndUsageErrors) {
  TempDir dir;
  ProgramResult r = run_program(dir, "--help");
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("uq ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("Kokkos command line arguments"), std::string::npos) << "--help is ours, not Kokkos'";
  r = run_program(dir, "--kokkos-disable-warnings --version");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("uq ", 0), 0u);
  r = run_program(dir, "decode --q nothing.npy");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(last_line(r.err).rfind("uq decode: missing required option", 0), 0u) << r.err;
  r = run_program(dir, "");
  EXPECT_EQ(r.status, 2);
}

TEST(CliProgram, CorruptedAndMissingFilesExitCleanly) {
  TempDir dir;
  const std::string& valid = numpy_fixtures::f32_2x3_v1;
  for (std::size_t cut : {std::size_t(0), std::size_t(5), std::size_t(9), std::size_t(60), valid.size() - 1}) {
    write_bytes(dir.file("q.npy"), valid.substr(0, cut));
    const ProgramResult r = run_program(dir, "rotate-q --q " + dir.file("q.npy") + " --out " + dir.file("o.npy"));
    ASSERT_TRUE(r.exited) << "killed by a signal on a file cut to " << cut << " bytes";
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(last_line(r.err).rfind("uq rotate-q: " + dir.file("q.npy") + ": expected ", 0), 0u) << r.err;
  }
  const ProgramResult r = run_program(dir, "rotate-q --q " + dir.file("absent.npy") + " --out " + dir.file("o.npy"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos);
  EXPECT_FALSE(exists(dir.file("o.npy")));
}

TEST(CliProgram, WriteKvThenDecodeThroughFiles) {
  TempDir dir;
  constexpr int T = 65, Hk = 1, BS = 16, NB = 5, D = 256;
  const std::vector<float> k = random_values(std::size_t(T) * Hk * D, 21), v = random_values(std::size_t(T) * Hk * D, 22);
  std::vector<std::int64_t> slots(T);
  std::iota(slots.begin(), slots.end(), 7);  // tokens t -> slots 7..71: blocks 0..4
  save_f32(dir.file("k.npy"), {T, Hk, D}, k);
  save_f32(dir.file("v.npy"), {T, Hk, D}, v);
  save_i64(dir.file("slots.npy"), {T}, slots);
  ProgramResult r = run_program(dir, "write-kv --k " + dir.file("k.npy") + " --v " + dir.file("v.npy") + " --slots " +
                                         dir.file("slots.npy") + " --cache " + dir.file("cache.npy") +
                                         " --num-blocks 5 --block-size 16");
  ASSERT_EQ(r.status, 0) << r.err;
  // The cache equals the reference writer's.
  std::vector<std::uint16_t> kb(k.size()), vb(v.size());
  for (std::size_t i = 0; i < k.size(); ++i) {
    kb[i] = uqref::bf16_round(k[i]);
    vb[i] = uqref::bf16_round(v[i]);
  }
  std::vector<std::uint8_t> want(NB * BS * Hk * 272, 0);
  uqref::uq_write_kv(kb.data(), vb.data(), slots.data(), T, Hk, want.data(), NB, BS, 272);
  EXPECT_TRUE(load_as<std::uint8_t>(dir.file("cache.npy"), 'u', 1) == want);

  // One sequence reading tokens 7..71 of the cache as its tokens 0..64... through a
  // block table whose first block starts at slot 0: seq_len 72 covers slots 0..71,
  // slots 0..6 hold zeros (all-zero groups, scale byte 0).
  save_f32(dir.file("q.npy"), {1, 6, D}, random_values(6 * D, 23));
  save_i32(dir.file("bt.npy"), {1, NB}, {0, 1, 2, 3, 4});
  save_i32(dir.file("sl.npy"), {1}, {72});
  r = run_program(dir, "decode --q " + dir.file("q.npy") + " --cache " + dir.file("cache.npy") + " --block-tables " +
                           dir.file("bt.npy") + " --seq-lens " + dir.file("sl.npy") + " --qg 6 --out " +
                           dir.file("out.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("uq decode: wrote"), std::string::npos);
  const std::vector<float> out = load_as<float>(dir.file("out.npy"), 'f', 4);
  ASSERT_EQ(out.size(), std::size_t(6 * D));
  const std::vector<std::uint16_t> qb = [&] {
    const std::vector<float> qf = load_as<float>(dir.file("q.npy"), 'f', 4);
    std::vector<std::uint16_t> b(qf.size());
    for (std::size_t i = 0; i < qf.size(); ++i) b[i] = uqref::bf16_round(qf[i]);
    return b;
  }();
  const std::int32_t table[NB] = {0, 1, 2, 3, 4}, len = 72;
  const uqref::DecodeResult ref = uqref::uq_decode(
      uqtest::reference_decode_inputs(qb.data(), 6, 6, want.data(), NB, BS, 1, 272, table, NB, &len, 1, 1.0 / 16));
  for (std::size_t i = 0; i < out.size(); ++i) {
    // 3 bf16 roundings of at most 2^-8 vmax each dominate (decode_tolerance.hpp).
    EXPECT_NEAR(out[i], ref.out[i], 4 * std::ldexp(ref.vmax[i], -8) + 1e-30) << i;
  }
}
