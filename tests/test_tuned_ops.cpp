// The seam refuses by construction what a path has not implemented: a new variant of an
// operation is a new launch type (uq/impl/tuned_path.hpp), and every tuned path of this build
// refuses it, with a reason, until it specialises TunedOp for it — even a variant that extends
// an existing launch description, whose kernels would otherwise read the old fields and
// silently compute the old variant.
#include "support/test_util.hpp"
#include "uq/uq.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>

namespace {

using uq::Backend;
using uq::Path;
using uqtest::Exec;

// A decode variant no path has written a kernel for: the partition launch plus a field.
struct DecodeVariantLaunch : uq::impl::DecodePartitionsLaunch {
  static constexpr const char* kName = "decode variant (test)";
  int query_len = 2;
};
using VariantCall = uq::impl::TunedCall<Exec, DecodeVariantLaunch>;

// Compile time, over every row of the table with whatever specialisations this build includes
// (the CUDA build sm90's, the HIP build gfx950's, host builds the host path's).
template <std::size_t... I>
constexpr bool no_path_has_the_variant(std::index_sequence<I...>) {
  return (!uq::impl::TunedOp<uq::kTunedPaths[I].path, DecodeVariantLaunch>::available && ...);
}
static_assert(no_path_has_the_variant(std::make_index_sequence<uq::kTunedPathCount>{}),
              "a tuned path claims a launch type it never specialised");
static_assert(!uq::impl::any_path_implements<Exec, DecodeVariantLaunch>(), "");

// A device of the kind and architecture a row names.
uq::DeviceInfo device_of(const uq::TunedPathRow& r) {
  uq::DeviceInfo d;
  for (int k = 0; k <= static_cast<int>(uq::ExecKind::Other); ++k)
    if (uq::has_kind(r.kinds, static_cast<uq::ExecKind>(k))) {
      d.kind = static_cast<uq::ExecKind>(k);
      break;
    }
  d.arch = r.arch_prefix;
  d.name = std::string("a device of ") + r.name;
  return d;
}

// Every path of the table, on a device it matches: built here or not, with every operation or
// none, the variant never reaches it — Auto says why, Native throws.
TEST(TunedOps, EveryPathRefusesANewLaunchVariantWithAReason) {
  const uq::BuiltPaths built = uq::impl::built_paths();
  const uq::BuiltPaths with_variant = uq::impl::paths_implementing<Exec, DecodeVariantLaunch>();
  for (const uq::TunedPathRow& r : uq::kTunedPaths) {
    SCOPED_TRACE(r.name);
    EXPECT_FALSE(with_variant.has(r.path));
    const uq::DeviceInfo d = device_of(r);
    const uq::PathChoice c = uq::choose_candidate("uq::decode", DecodeVariantLaunch::kName, d, Backend::Auto, built, with_variant);
    EXPECT_EQ(c.path, Path::Generic);
    if (built.has(r.path))
      EXPECT_EQ(c.reason, std::string(r.name) + " has no decode variant (test) kernel");
    else
      EXPECT_NE(c.reason.find("no tuned path for"), std::string::npos) << c.reason;
    uqtest::expect_error(
        [&] { uq::choose_candidate("uq::decode", DecodeVariantLaunch::kName, d, Backend::Native, built, with_variant); },
        {"uq::decode", "config.backend", "decode variant (test)", "Backend::Native on a device of"});
  }
}

// The dispatcher itself, on this build's execution space: the variant runs the generic code and
// the reason names it; Native throws before anything runs.
TEST(TunedOps, TheDispatcherRunsAVariantOnlyOnTheGenericPath) {
  const uq::DeviceInfo here = uq::impl::device_info(Exec());
  const uq::PathChoice c = VariantCall::candidate("uq::decode", Backend::Auto, here);
  EXPECT_EQ(c.path, Path::Generic);
  EXPECT_NE(c.reason.find("decode variant (test)"), std::string::npos) << c.reason;
  EXPECT_EQ(VariantCall::tuned_path(here), Path::Generic);

  int generic_runs = 0;
  uq::PathChoice ran;
  VariantCall::run("uq::decode", Exec(), c, Backend::Auto, std::make_tuple(DecodeVariantLaunch{}), ran,
                   [&] { ++generic_runs; });
  EXPECT_EQ(generic_runs, 1);
  EXPECT_EQ(ran.path, Path::Generic);
  EXPECT_EQ(ran.reason, c.reason);

  // Native: refused at the choice, wherever this build has a path for the device or not.
  uqtest::expect_error([&] { VariantCall::candidate("uq::decode", Backend::Native, here); },
                       {"uq::decode", "config.backend", "decode variant (test)", "Backend::Native on"});

  // A tuned path handed the variant anyway (a caller's bug) refuses it like any call it
  // cannot take: it never runs its old kernel on the new launch.
  const uq::BuiltPaths built_here = uq::impl::built_paths_for<Exec>();
  for (const uq::TunedPathRow& r : uq::kTunedPaths) {
    if (!built_here.has(r.path)) continue;
    SCOPED_TRACE(r.name);
    generic_runs = 0;
    VariantCall::run("uq::decode", Exec(), uq::PathChoice{r.path, ""}, Backend::Auto,
                     std::make_tuple(DecodeVariantLaunch{}), ran, [&] { ++generic_runs; });
    EXPECT_EQ(generic_runs, 1);
    EXPECT_EQ(ran.path, Path::Generic);
    EXPECT_NE(ran.reason.find(std::string(r.name) + " has no decode variant (test) kernel"), std::string::npos)
        << ran.reason;
    uqtest::expect_error(
        [&] {
          VariantCall::run("uq::decode", Exec(), uq::PathChoice{r.path, ""}, Backend::Native,
                           std::make_tuple(DecodeVariantLaunch{}), ran, [&] { ++generic_runs; });
        },
        {"uq::decode", "config.backend", "has no decode variant (test) kernel"});
  }
}

// What the seam does implement stays reachable: the operations each built path specialises
// are found for its execution space (the decode pair and the scorer on sm90 and gfx950, the
// index writer on the host path), and nothing else.
TEST(TunedOps, BuiltPathsImplementExactlyTheirOperations) {
  using uq::impl::paths_implementing;
  const uq::BuiltPaths here = uq::impl::built_paths_for<Exec>();
  const uq::BuiltPaths decode = paths_implementing<Exec, uq::impl::DecodePartitionsLaunch, uq::impl::DecodeReduceLaunch>();
  const uq::BuiltPaths score = paths_implementing<Exec, uq::impl::ScoreLaunch>();
  const uq::BuiltPaths kv_writer = paths_implementing<Exec, uq::impl::KvWriteLaunch>();
  const uq::BuiltPaths index_writer = paths_implementing<Exec, uq::impl::IndexKeyWriteLaunch>();
  for (Path p : {Path::Gfx950, Path::Sm90}) {
    EXPECT_EQ(decode.has(p), here.has(p)) << uq::path_name(p);
    EXPECT_EQ(score.has(p), here.has(p)) << uq::path_name(p);
    EXPECT_FALSE(index_writer.has(p)) << uq::path_name(p);
  }
  EXPECT_EQ(index_writer.has(Path::HostSimd), here.has(Path::HostSimd));
  EXPECT_FALSE(decode.has(Path::HostSimd));
  EXPECT_FALSE(score.has(Path::HostSimd));
  for (const uq::TunedPathRow& r : uq::kTunedPaths) EXPECT_FALSE(kv_writer.has(r.path)) << r.name;
}

// Revision 3's operations (spec ultraquant.md §5.9, §7) are launch types of their own, which a
// path runs only where it specialises them: decode with several query tokens per sequence (which
// extends the partition launch, so a path's one-token kernel would otherwise compute the wrong
// thing) has a gfx950 kernel (the HIP build: arch/gfx950/tuned_path.hpp; its launcher refuses
// the launches whose query rows do not fit two 16-column MFMA N tiles, which then run generic with
// that reason: tests/emu/test_emu_decode_queries.cpp) and an sm90 kernel (the CUDA build:
// arch/sm90/tuned_path.hpp; its launcher refuses more than 32 query rows per KV head:
// test_decode_queries.cpp, PathAndReason); no path has the gather; and a further variant of the
// multi-token launch (a new type derived from it) is refused by every path, gfx950 and sm90
// included.
struct QueriesVariantLaunch : uq::impl::DecodeQueriesLaunch {
  static constexpr const char* kName = "decode queries variant (test)";
  int window = 0;
};

template <Path P>
constexpr bool revision_3_as_specialised() {
  constexpr bool gfx950_here = P == Path::Gfx950 && uq::impl::TunedSpace<Path::Gfx950>::built;
  constexpr bool sm90_here = P == Path::Sm90 && uq::impl::TunedSpace<Path::Sm90>::built;
  return uq::impl::TunedOp<P, uq::impl::DecodeQueriesLaunch>::available == (gfx950_here || sm90_here) &&
         !uq::impl::TunedOp<P, uq::impl::KvGatherLaunch>::available &&
         !uq::impl::TunedOp<P, QueriesVariantLaunch>::available;
}
template <std::size_t... I>
constexpr bool every_path_as_specialised(std::index_sequence<I...>) {
  return (revision_3_as_specialised<uq::kTunedPaths[I].path>() && ...);
}
static_assert(every_path_as_specialised(std::make_index_sequence<uq::kTunedPathCount>{}),
              "a tuned path claims decode queries, the gather or a variant it never specialised: update this "
              "test and DecodePlan's note");
static_assert(!uq::impl::any_path_implements<Exec, QueriesVariantLaunch>(), "");

TEST(TunedOps, SeveralQueryTokensRunTunedOnlyWhereAPathHasTheKernel) {
  const uq::DeviceInfo here = uq::impl::device_info(Exec());
  // gfx950's and sm90's multi-token kernels are there exactly where their paths run on this
  // execution space.
  const bool claimed = uq::impl::any_path_implements<Exec, uq::impl::DecodeQueriesLaunch>();
  EXPECT_EQ(claimed, uq::impl::built_paths_for<Exec>().has(Path::Gfx950) ||
                         uq::impl::built_paths_for<Exec>().has(Path::Sm90));
  using Dispatch = uq::impl::DecodeDispatch<Exec>;
  for (bool direct : {false, true}) {
    const uq::PathChoice c = Dispatch::queries_candidate(Backend::Auto, here, direct);
    EXPECT_EQ(c.path, Dispatch::QueriesTwoKernels::tuned_path(here)) << c.reason;
    if (!claimed) {
      EXPECT_EQ(c.path, Path::Generic);
      EXPECT_NE(c.reason.find("decode queries"), std::string::npos) << c.reason;
    }
  }
  // A further variant: generic on every device, Native refused with its name.
  using Variant = uq::impl::TunedCall<Exec, QueriesVariantLaunch>;
  const uq::PathChoice v = Variant::candidate("uq::decode", Backend::Auto, here);
  EXPECT_EQ(v.path, Path::Generic);
  EXPECT_NE(v.reason.find("decode queries variant (test)"), std::string::npos) << v.reason;
  uqtest::expect_error([&] { Variant::candidate("uq::decode", Backend::Native, here); },
                       {"uq::decode", "config.backend", "decode queries variant (test)"});
  using Gather = uq::impl::TunedCall<Exec, uq::impl::KvGatherLaunch>;
  EXPECT_EQ(Gather::candidate("uq::gather_kv", Backend::Auto, here).path, Path::Generic);
  uqtest::expect_error([&] { Gather::candidate("uq::gather_kv", Backend::Native, here); },
                       {"uq::gather_kv", "config.backend", "KV cache gather"});
}

}  // namespace

namespace {

// A plan's partitions: the spec's default unless its path's partition kernel has its own rule
// (gfx950: arch/gfx950/partition_rule.hpp, compiled in the HIP suite); the generic path and the
// paths without a rule keep the spec's.
TEST(TunedOps, PartitionRuleComesFromThePathOrTheSpec) {
  const uq::PartitionChoice spec = uq::choose_partitions(4, 1172, 64);
  for (Path p : {Path::Generic, Path::Sm90, Path::HostSimd}) {
    const uq::PartitionChoice c =
        uq::impl::DecodeDispatch<Exec>::default_partitions(p, 4, 1, 1172, 64, 256, spec);
    EXPECT_EQ(c.partitions, spec.partitions) << uq::path_name(p);
    EXPECT_EQ(c.tile_groups_per_part, spec.tile_groups_per_part) << uq::path_name(p);
  }
}

}  // namespace
