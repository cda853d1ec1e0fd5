// The gfx950 scorer's launcher (score.hip compiled host + device by clang-22 against Debian's
// HIP headers into uq_gfx950) links into a host program and runs up to the HIP runtime. This
// machine has no AMD GPU: a launch must come back as a uq::Error naming the HIP error, and bad
// arguments must be rejected before the runtime is reached.
#include <hip/hip_runtime_api.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gfx950/score_launch_args.hpp"
#include "uq/error.hpp"

namespace {

int hip_devices() {
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess) return 0;
  return count;
}

std::string launch_error(const uq::gfx950::ScoreLaunch& l) {
  try {
    uq::gfx950::launch_score(l);
  } catch (const uq::Error& e) {
    return e.what();
  }
  return "";
}

// A well-formed launch of 2 requests (host pointers: never dereferenced on the host).
struct Fixture {
  std::vector<unsigned char> cache = std::vector<unsigned char>(9216 * 2), table = std::vector<unsigned char>(2048),
                             q = std::vector<unsigned char>(2 * 128);
  std::vector<int> tables = std::vector<int>(2 * 4), lens = std::vector<int>(2, 300);
  std::vector<float> scores = std::vector<float>(2 * 4);
  std::vector<unsigned long long> counters = std::vector<unsigned long long>(8);
  uq::gfx950::ScoreLaunch launch() {
    uq::gfx950::ScoreLaunch l;
    l.scores = scores.data();
    l.scores_stride_row = 4;
    l.counters = counters.data();
    l.q = q.data();
    l.q_stride_row = 128;
    l.index_cache = cache.data();
    l.num_blocks = 2;
    l.dequant_table = table.data();
    l.block_tables = tables.data();
    l.table_stride_req = 4;
    l.seq_lens = lens.data();
    l.num_reqs = 2;
    l.max_blocks = 4;
    l.knobs = uq::gfx950::choose_score_knobs(2, 4, 1, 1, 0);
    return l;
  }
};

TEST(Gfx950ScoreLink, LaunchFailsWithoutDevice) {
  if (hip_devices() > 0) GTEST_SKIP() << "a HIP device is present: this test covers the no-device path only";
  Fixture f;
  const std::string what = launch_error(f.launch());
  EXPECT_NE(what.find("uq::gfx950::launch_score"), std::string::npos) << what;
  EXPECT_NE(what.find("hipError"), std::string::npos) << what;
}

TEST(Gfx950ScoreLink, NothingToLaunchIsNotAnError) {
  Fixture f;
  uq::gfx950::ScoreLaunch l = f.launch();
  l.num_reqs = 0;
  EXPECT_EQ(launch_error(l), "");
}

TEST(Gfx950ScoreLink, BadArgumentsAreRejectedBeforeTheRuntime) {
  Fixture f;
  uq::gfx950::ScoreLaunch l = f.launch();
  l.heads = 3;
  const std::string what = launch_error(l);
  EXPECT_NE(what.find("uq::gfx950::launch_score: argument 'heads': expected 1, 2 or 4, got 3"), std::string::npos)
      << what;
}

}  // namespace
