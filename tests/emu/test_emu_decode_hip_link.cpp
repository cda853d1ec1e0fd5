// The gfx950 decode library (uq_gfx950: decode.hip and reduce.hip compiled host + device by
// clang-22 against Debian's HIP headers) links into a host program, and its launchers run up
// to the HIP runtime. This machine has no AMD GPU: the runtime must say so, and a launch must
// come back as a uq::Error naming the HIP error (nothing here runs a kernel).
#include <hip/hip_runtime_api.h>

#include <gtest/gtest.h>

#include <string>

#include "gfx950/decode_launch_args.hpp"
#include "uq/error.hpp"

namespace {

int hip_devices() {
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess) return 0;
  return count;
}

// What a launch without a device reports.
template <class Launch>
std::string launch_error(Launch&& launch) {
  try {
    launch();
  } catch (const uq::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gfx950Link, RuntimeReportsNoDevice) {
  int count = -1;
  const hipError_t rc = hipGetDeviceCount(&count);
  EXPECT_TRUE(rc == hipErrorNoDevice || (rc == hipSuccess && count == 0))
      << "hipGetDeviceCount: " << hipGetErrorName(rc) << ", count " << count
      << " (this test expects a machine without an AMD GPU)";
}

// A valid launch of one sequence, one KV head at QG 8, one 16-token block, one partition.
uq::gfx950::DecodePartitionsLaunch one_block_launch() {
  uq::gfx950::DecodePartitionsLaunch l;
  l.num_seqs = 1;
  l.num_kv_heads = 1;
  l.qg = 8;
  l.block_size = 16;
  l.slot_bytes = 272;
  l.max_blocks_per_seq = 1;
  l.partitions = 1;
  l.tgpp = 1;
  l.q_stride_seq = 8 * 256;
  l.q_stride_head = 256;
  return l;
}

// The launcher got past its argument checks and failed in the HIP runtime, naming itself.
void expect_runtime_failure(const std::string& what, const std::string& launcher) {
  EXPECT_NE(what.find(launcher), std::string::npos) << what;
  EXPECT_NE(what.find("hipError"), std::string::npos) << what;
}

TEST(Gfx950Link, PartitionLaunchFailsWithoutDevice) {
  if (hip_devices() > 0) GTEST_SKIP() << "a HIP device is present: this test covers the no-device path only";
  const uq::gfx950::DecodePartitionsLaunch l = one_block_launch();
  expect_runtime_failure(launch_error([&] { uq::gfx950::launch_decode_partitions(l); }),
                         "uq::gfx950::launch_decode_partitions");
}

// The multi-token kernel's launcher (decode_queries.hip) links and reaches the runtime too.
TEST(Gfx950Link, QueriesLaunchFailsWithoutDevice) {
  if (hip_devices() > 0) GTEST_SKIP() << "a HIP device is present: this test covers the no-device path only";
  uq::gfx950::DecodeQueriesLaunch l;
  static_cast<uq::gfx950::DecodePartitionsLaunch&>(l) = one_block_launch();
  l.query_len = 2;
  l.max_query_len = 2;
  l.num_query_tokens = 2;
  expect_runtime_failure(launch_error([&] { uq::gfx950::launch_decode_queries(l); }),
                         "uq::gfx950::launch_decode_queries");
}

TEST(Gfx950Link, ReduceLaunchFailsWithoutDevice) {
  if (hip_devices() > 0) GTEST_SKIP() << "a HIP device is present: this test covers the no-device path only";
  uq::gfx950::DecodeReduceLaunch l;
  l.num_seqs = 2;
  l.num_kv_heads = 1;
  l.qg = 6;
  l.partitions = 4;
  l.out_stride_seq = 6 * 256;
  l.out_stride_head = 256;
  const std::string what = launch_error([&] { uq::gfx950::launch_decode_reduce(l); });
  EXPECT_NE(what.find("uq::gfx950::launch_decode_reduce"), std::string::npos) << what;
  EXPECT_NE(what.find("hipError"), std::string::npos) << what;
}

TEST(Gfx950Link, BadArgumentsAreRejectedBeforeTheRuntime) {
  uq::gfx950::DecodePartitionsLaunch l;
  l.num_seqs = 1;
  l.num_kv_heads = 1;
  l.qg = 7;
  const std::string what = launch_error([&] { uq::gfx950::launch_decode_partitions(l); });
  EXPECT_NE(what.find("argument 'qg': expected 6, 8 or 16, got 7"), std::string::npos) << what;
}

}  // namespace
