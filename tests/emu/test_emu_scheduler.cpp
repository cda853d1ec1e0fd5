// The emulator's execution model: ids over the grid and waves, rendezvous and barriers, and
// the faults that enforce the cross-lane rule (both call sites named).
#include <array>
#include <atomic>
#include <stdexcept>

#include "emu_test_support.hpp"
#include "uq/error.hpp"

namespace emu_test {
namespace {

TEST(EmuScheduler, IdsCoverTheGridAndEveryWave) {
  // An awkward grid and 3 waves: every (workgroup, work-item) runs exactly once, with
  // consistent ids.
  uq::emu::LaunchConfig config;
  config.grid = {3, 2, 5};
  config.waves_per_workgroup = 3;
  const std::uint32_t n_wg = 3 * 2 * 5, n_items = 3 * 64;
  std::vector<int> seen(n_wg * n_items, 0);
  std::vector<std::uint32_t> order;
  uq::emu::launch(config, [&] {
    const std::uint32_t x = workgroup_id_x(), y = workgroup_id_y(), z = workgroup_id_z();
    const std::uint32_t t = thread_id();
    const std::uint32_t wg = x + 3 * (y + 2 * z);
    ++seen[wg * n_items + t];
    EXPECT_EQ(lane_id(), t % 64);
    EXPECT_EQ(wave_id(), t / 64);
    if (t == 0) order.push_back(wg);
  });
  for (int s : seen) ASSERT_EQ(s, 1);
  // Workgroups run one after another, x fastest.
  ASSERT_EQ(order.size(), n_wg);
  for (std::uint32_t i = 0; i < n_wg; ++i) EXPECT_EQ(order[i], i);
}

TEST(EmuScheduler, LanesRunInOrderBetweenRendezvous) {
  // Deterministic schedule: lanes 0..63 run in order up to the first rendezvous; the last
  // one to arrive (63) computes it and runs on, then 0..62 resume.
  std::vector<std::uint32_t> trace;
  run_one_wave([&] {
    trace.push_back(lane_id());
    (void)ballot(true);
    trace.push_back(100 + lane_id());
  });
  ASSERT_EQ(trace.size(), 128u);
  for (std::uint32_t l = 0; l < 64; ++l) EXPECT_EQ(trace[l], l);
  EXPECT_EQ(trace[64], 163u);
  for (std::uint32_t l = 0; l < 63; ++l) EXPECT_EQ(trace[65 + l], 100 + l);
}

TEST(EmuScheduler, BarrierOrdersLdsAcrossWaves) {
  // 4 waves: each work-item writes its id, the barrier, then each reads a work-item of
  // another wave (reversed order). Without the barrier the race detector would fault.
  uq::emu::LaunchConfig config;
  config.waves_per_workgroup = 4;
  config.grid = {2, 1, 1};
  std::vector<std::uint32_t> got(2 * 256, kPoison);
  uq::emu::launch(config, [&] {
    const std::uint32_t lds = lds_allocate<256 * 4>();
    const std::uint32_t t = thread_id();
    lds_store(lds + 4 * t, t * 7 + workgroup_id_x());
    barrier();
    got[workgroup_id_x() * 256 + t] = lds_load<std::uint32_t>(lds + 4 * (255 - t));
  });
  for (std::uint32_t wg = 0; wg < 2; ++wg) {
    for (std::uint32_t t = 0; t < 256; ++t) EXPECT_EQ(got[wg * 256 + t], (255 - t) * 7 + wg);
  }
}

TEST(EmuScheduler, LanesKeepKilobytesOfLocalArrays) {
  // Kernels keep arrays of a few KB per lane: 8 KB here, in every one of 128 lanes.
  uq::emu::LaunchConfig config;
  config.waves_per_workgroup = 2;
  std::vector<double> sums(128, -1.0);
  uq::emu::launch(config, [&] {
    volatile double local[1024];
    for (int i = 0; i < 1024; ++i) local[i] = i * 0.5 + thread_id();
    (void)ballot(true);  // the arrays live across a fiber switch
    double s = 0;
    for (int i = 0; i < 1024; ++i) s += local[i];
    sums[thread_id()] = s;
  });
  for (std::uint32_t t = 0; t < 128; ++t) EXPECT_EQ(sums[t], 1023.0 * 1024 / 4 + 1024.0 * t);
}

TEST(EmuScheduler, ManyLaunchesReuseNothingStale) {
  // Fiber stacks are made and freed per launch: many launches must neither leak nor
  // carry state over (the result of each depends on its own argument only).
  for (std::uint32_t i = 0; i < 200; ++i) {
    std::uint64_t mask = 0;
    run_one_wave([&] {
      const std::uint64_t b = ballot((lane_id() + i) % 3 == 0);
      if (lane_id() == 0) mask = b;
    });
    std::uint64_t expected = 0;
    for (std::uint32_t l = 0; l < 64; ++l) {
      if ((l + i) % 3 == 0) expected |= std::uint64_t{1} << l;
    }
    ASSERT_EQ(mask, expected) << "launch " << i;
  }
}

TEST(EmuScheduler, ExceptionFromTheKernelIsRethrown) {
  EXPECT_THROW(run_one_wave([&] {
                 if (lane_id() == 17) throw std::out_of_range("lane 17");
               }),
               std::out_of_range);
  // The emulator is usable again afterwards.
  int ran = 0;
  run_one_wave([&] { ++ran; });
  EXPECT_EQ(ran, 64);
}

// ---------------------------------------------------------------- rule violations
TEST(EmuScheduler, DivergentCrossLaneCallNamesBothSites) {
  // Lanes 0..31 take one branch, 32..63 the other, each with a swizzle: on hardware the
  // branches would run with partial EXEC masks; the emulator must refuse.
  int line_a = 0, line_b = 0;
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    std::uint32_t v = lane_id();
    if (lane_id() < 32) {
      line_a = __LINE__ + 1;
      v = ds_swizzle<swizzle_swap(1)>(v);
    } else {
      line_b = __LINE__ + 1;
      v = ds_swizzle<swizzle_swap(2)>(v);
    }
    (void)v;
  });
  ASSERT_FALSE(message.empty());
  EXPECT_NE(message.find("divergent cross-lane operation"), std::string::npos) << message;
  EXPECT_NE(message.find("test_emu_scheduler.cpp:" + std::to_string(line_a)), std::string::npos)
      << message;
  EXPECT_NE(message.find("test_emu_scheduler.cpp:" + std::to_string(line_b)), std::string::npos)
      << message;
  EXPECT_NE(message.find("lane 32 of wave 0"), std::string::npos) << message;
  EXPECT_NE(message.find("lanes 0-31"), std::string::npos) << message;
}

TEST(EmuScheduler, DifferentOperationsOnOneLineAreStillDistinguished) {
  // Same line, different operation names (mfma vs ballot).
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    if (lane_id() == 5) { (void)readfirstlane(1u); } else { (void)ballot(true); }
  });
  EXPECT_NE(message.find("v_readfirstlane_b32"), std::string::npos) << message;
  EXPECT_NE(message.find("ballot"), std::string::npos) << message;
}

TEST(EmuScheduler, LaneReturningEarlyIsAMissingLane) {
  int line_sync = 0, line_ret = 0;
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    line_sync = __LINE__ + 1;
    (void)ballot(true);
    line_ret = __LINE__ + 1;
    if (lane_id() == 9) return;
    (void)shfl_xor<1>(lane_id());
  });
  EXPECT_NE(message.find("missing lane"), std::string::npos) << message;
  EXPECT_NE(message.find("lane 9 of wave 0"), std::string::npos) << message;
  // Its last synchronisation point and the operation the others wait at.
  EXPECT_NE(message.find(":" + std::to_string(line_sync)), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line_ret + 1)), std::string::npos) << message;
  (void)line_ret;
}

TEST(EmuScheduler, LaneReturningBeforeTheOthersArriveIsAlsoCaught) {
  // Lane 0 returns before any other lane reaches the shuffle (lanes run in order): the
  // fault comes when lane 1 arrives.
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    if (lane_id() == 0) return;
    (void)shfl_xor<1>(lane_id());
  });
  EXPECT_NE(message.find("missing lane: lane 0 of wave 0"), std::string::npos) << message;
  EXPECT_NE(message.find("no cross-lane operation before"), std::string::npos) << message;
}

TEST(EmuScheduler, WaveSkippingABarrierIsAMissingWave) {
  uq::emu::LaunchConfig config;
  config.waves_per_workgroup = 2;
  int line = 0;
  const std::string message = fault_of(config, [&] {
    if (wave_id() == 1) return;
    line = __LINE__ + 1;
    barrier();
  });
  EXPECT_NE(message.find("missing wave: wave 1"), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line)), std::string::npos) << message;
}

TEST(EmuScheduler, WavesAtDifferentBarriersAreDivergent) {
  uq::emu::LaunchConfig config;
  config.waves_per_workgroup = 2;
  int line_0 = 0, line_1 = 0;
  const std::string message = fault_of(config, [&] {
    if (wave_id() == 0) {
      line_0 = __LINE__ + 1;
      barrier();
    } else {
      line_1 = __LINE__ + 1;
      barrier();
    }
  });
  EXPECT_NE(message.find("divergent barrier"), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line_0)), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line_1)), std::string::npos) << message;
}

TEST(EmuScheduler, ReadlaneNeedsAUniformLaneIndex) {
  const std::string message =
      fault_of(uq::emu::LaunchConfig{}, [&] { (void)readlane(lane_id(), lane_id() == 3 ? 4u : 5u); });
  EXPECT_NE(message.find("wave-uniform"), std::string::npos) << message;
}

TEST(EmuScheduler, OperationsOutsideALaunchThrow) {
  EXPECT_THROW((void)lane_id(), uq::emu::Fault);
  EXPECT_THROW((void)ballot(true), uq::emu::Fault);
}

TEST(EmuScheduler, BadConfigurationsAreUqErrors) {
  uq::emu::LaunchConfig config;
  config.waves_per_workgroup = 0;
  try {
    uq::emu::launch(config, [] {});
    FAIL() << "no error";
  } catch (const uq::Error& e) {
    EXPECT_EQ(e.argument(), "config.waves_per_workgroup");
    EXPECT_EQ(e.actual(), "0");
  }
  config.waves_per_workgroup = 17;
  EXPECT_THROW(uq::emu::launch(config, [] {}), uq::Error);
  config.waves_per_workgroup = 1;
  config.grid = {4, 0, 1};
  EXPECT_THROW(uq::emu::launch(config, [] {}), uq::Error);
}

}  // namespace
}  // namespace emu_test
