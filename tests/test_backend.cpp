// The pure backend-selection function and the default partition choice.
#include "support/test_util.hpp"
#include "uq/uq.hpp"

#include <gtest/gtest.h>

namespace {

using uq::Backend;
using uq::BuiltPaths;
using uq::DeviceInfo;
using uq::ExecKind;
using uq::Path;

DeviceInfo dev(ExecKind k, const char* arch, const char* name = "dev") {
  DeviceInfo d;
  d.kind = k;
  d.arch = arch;
  d.name = name;
  return d;
}

TEST(Backend, AutoTakesNativeOnlyWhereBuiltAndEligible) {
  const BuiltPaths both = BuiltPaths::of({Path::Gfx950, Path::Sm90}), none;
  const DeviceInfo mi355 = dev(ExecKind::Hip, "gfx950:sramecc+:xnack-"), h200 = dev(ExecKind::Cuda, "sm_90");
  const DeviceInfo mi300 = dev(ExecKind::Hip, "gfx942"), b200 = dev(ExecKind::Cuda, "sm_100");
  const DeviceInfo host = dev(ExecKind::OpenMP, "");
  EXPECT_EQ(uq::select_path("f", mi355, Backend::Auto, true, both), Path::Gfx950);
  EXPECT_EQ(uq::select_path("f", h200, Backend::Auto, true, both), Path::Sm90);
  EXPECT_EQ(uq::select_path("f", mi355, Backend::Auto, false, both), Path::Generic);  // ineligible shape
  EXPECT_EQ(uq::select_path("f", mi355, Backend::Auto, true, none), Path::Generic);   // not built
  EXPECT_EQ(uq::select_path("f", mi300, Backend::Auto, true, both), Path::Generic);
  EXPECT_EQ(uq::select_path("f", b200, Backend::Auto, true, both), Path::Generic);
  EXPECT_EQ(uq::select_path("f", host, Backend::Auto, true, both), Path::Generic);
  EXPECT_EQ(uq::select_path("f", h200, Backend::Generic, true, both), Path::Generic);
  // a HIP gfx950 device must not pick the CUDA kernels, nor the reverse
  EXPECT_EQ(uq::select_path("f", mi355, Backend::Auto, true, BuiltPaths::of({Path::Sm90})), Path::Generic);
  EXPECT_EQ(uq::select_path("f", h200, Backend::Auto, true, BuiltPaths::of({Path::Gfx950})), Path::Generic);
}

TEST(Backend, NativeIsAnErrorWhereNoNativePathExists) {
  const BuiltPaths both = BuiltPaths::of({Path::Gfx950, Path::Sm90});
  EXPECT_EQ(uq::select_path("f", dev(ExecKind::Cuda, "sm_90"), Backend::Native, true, both), Path::Sm90);
  uqtest::expect_error(
      [&] { uq::select_path("uq::decode", dev(ExecKind::Serial, "", "Serial (host)"), Backend::Native, true, both); },
      {"uq::decode", "config.backend", "Backend::Native on Serial (host)"});
  uqtest::expect_error([&] { uq::select_path("uq::score", dev(ExecKind::Cuda, "sm_80", "A100"), Backend::Native, true, both); },
                       {"uq::score", "A100 (sm_80)"});
  uqtest::expect_error([&] { uq::select_path("f", dev(ExecKind::Cuda, "sm_90"), Backend::Native, false, both); },
                       {"ineligible shape"});
}

// The per-call choice: a tuned path's rejection (its launcher's checks on the call's
// arguments) sends Auto to the generic path with the reason, and makes Native an error that
// carries it; Generic and devices without a tuned path say why too.
TEST(Backend, ChoosePathFallsBackWithAReasonOrThrowsForNative) {
  const BuiltPaths both = BuiltPaths::of({Path::Gfx950, Path::Sm90});
  const DeviceInfo h200 = dev(ExecKind::Cuda, "sm_90", "NVIDIA H200"), a100 = dev(ExecKind::Cuda, "sm_80", "A100");
  const std::string why = "uq::sm90::launch_score: argument 'q': expected a 16-byte aligned view, got 3";
  uq::PathChoice c = uq::choose_path("uq::score", h200, Backend::Auto, "", both);
  EXPECT_EQ(c.path, Path::Sm90);
  EXPECT_EQ(c.reason, "");
  c = uq::choose_path("uq::score", h200, Backend::Auto, why, both);
  EXPECT_EQ(c.path, Path::Generic);
  EXPECT_EQ(c.reason, "sm90 cannot take this call: " + why);
  c = uq::choose_path("uq::score", h200, Backend::Generic, why, both);
  EXPECT_EQ(c.path, Path::Generic);
  EXPECT_EQ(c.reason, "Backend::Generic requested");
  c = uq::choose_path("uq::score", a100, Backend::Auto, "", both);
  EXPECT_EQ(c.path, Path::Generic);
  EXPECT_EQ(c.reason, "no tuned path for A100 (sm_80) in this build");
  uqtest::expect_error([&] { uq::choose_path("uq::score", h200, Backend::Native, why, both); },
                       {"uq::score", "config.backend", "sm90 kernel", why, "Backend::Auto would take the generic path"});
  uqtest::expect_error([&] { uq::choose_path("uq::decode", a100, Backend::Native, "", both); },
                       {"uq::decode", "Backend::Native on A100 (sm_80)"});
}

// Auto on this build's default space: generic on the host backends; the Hopper kernels in a
// CUDA build run on a compute capability 9.x device; generic on any other GPU.
TEST(Backend, ThisBuildsDefaultSpaceTakesItsNativePathOnlyWhereBuilt) {
  const DeviceInfo d = uq::impl::device_info(uqtest::Exec());
  EXPECT_FALSE(d.name.empty());
  const Path got = uq::select_path("f", d, Backend::Auto, true, uq::impl::built_paths());
  const bool hopper = d.kind == ExecKind::Cuda && d.arch.rfind("sm_90", 0) == 0;
  if (hopper && uq::impl::built_paths().has(uq::Path::Sm90))
    EXPECT_EQ(got, Path::Sm90);
  else if (d.kind != ExecKind::Hip)
    EXPECT_EQ(got, Path::Generic) << d.name << " (" << d.arch << ")";
  EXPECT_EQ(got, uq::native_path_for(d, uq::impl::built_paths()));
}

// The launcher's algorithm (spec ultraquant.md §5) on the worked cases of
// ultraquant-sources.md §8.2 and its boundaries.
TEST(Partitions, DefaultChoiceMatchesTheLauncher) {
  struct Row { int seqs, max_blocks, block_size, P, tgpp; };
  const Row rows[] = {
      {1, 64, 32, 16, 1},        // seq 2048: W = 2048, required 8 -> floor 32 capped by ceil(2048/192) = 11 -> 16
      {9, 32, 64, 16, 1},        // same W at B = 9
      {16, 1024, 64, 256, 1},    // 64k context, B = 16
      {8, 4096, 64, 512, 2},     // 262144 tokens, B <= 8
      {9, 4096, 64, 256, 4},     // same, B > 8
      {1, 8, 16, 2, 1},          // W = 128
      {4, 1172, 64, 512, 1},     // the headline 75k shape: required 293 -> 512
      {1, 0, 16, 2, 1},          // an empty table
  };
  for (const Row& r : rows) {
    const uq::PartitionChoice c = uq::choose_partitions(r.seqs, r.max_blocks, r.block_size);
    EXPECT_EQ(c.partitions, r.P) << r.seqs << " " << r.max_blocks << " " << r.block_size;
    EXPECT_EQ(c.tile_groups_per_part, r.tgpp) << r.seqs << " " << r.max_blocks << " " << r.block_size;
    EXPECT_GE(static_cast<long>(c.partitions) * c.tile_groups_per_part * 256, static_cast<long>(r.max_blocks) * r.block_size);
  }
  // overrides: TGPP follows so that coverage holds
  const uq::PartitionChoice o = uq::choose_partitions(1, 100, 64, 3);
  EXPECT_EQ(o.partitions, 3);
  EXPECT_EQ(o.tile_groups_per_part, 16);  // required 25 -> ceil(25/3) = 9 -> 16
}

}  // namespace

namespace {

// The decode kernels' fast FP4 decode equals the codec definition exactly, for every
// code and every scale byte (fp4_times x half_scale == e2m1 x ue8m0, 0 for byte 0).
TEST(Fp4Decode, FastPathEqualsTheCodecForAllCodesAndScales) {
  for (int b = 0; b < 255; ++b)
    for (unsigned c = 0; c < 16; ++c) {
      const float want = uq::ultraquant::dequant(c, static_cast<std::uint8_t>(b));
      const float got = uq::ultraquant::fp4_times(c, uq::ultraquant::half_scale(static_cast<std::uint8_t>(b)));
      ASSERT_EQ(uq::codec::float_bits(got) & 0x7fffffffu, uq::codec::float_bits(want) & 0x7fffffffu)
          << "code " << c << " scale byte " << b;
      if (want != 0.0f) ASSERT_EQ(got, want);
    }
}

}  // namespace
