// The generic path's DecodePlan beyond the shared decode cases (decode_cases.hpp, stamped in
// test_decode.cpp): a strided output and a plan reused for fewer sequences than it was sized
// for give the convenience function's bits and leave the rest of the buffer alone; the two
// stages run separately give run()'s bits, and every partition writes its l and m.
#include "support/decode_case.hpp"

#include <gtest/gtest.h>

namespace {

using namespace uqtest;

TEST(Decode, StridedOutputAndPlanReuseGiveIdenticalBits) {
  const DecodeCase c = plan_reuse_case();
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);

  // Reference bits: the convenience function into a dense output.
  DeviceView<uq::bf16***> dense("dense", d.num_seqs, d.hq, 256);
  uq::decode(in.q, in.cache, in.tables, in.lens, dense);
  const auto want = to_host(dense);

  // A plan sized for more sequences, run twice, into the out part of a fused buffer.
  uq::DecodeShape shape{8, c.num_kv_heads, c.qg, c.block_size, d.max_blocks};
  uq::DecodeConfig cfg;
  cfg.check = false;
  uq::DecodePlan<Exec> plan(Exec(), shape, cfg);
  // The default partition choice depends on max_seqs (512 vs 256 cap) only for wide
  // tables; here both give the same P, so bits must match the convenience function.
  ASSERT_EQ(plan.partitions(), uq::choose_partitions(d.num_seqs, d.max_blocks, c.block_size).partitions);
  DeviceView<uq::bf16***> wide("wide", d.num_seqs, 2 * d.hq, 256);
  auto out = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(d.hq, 2 * d.hq), Kokkos::ALL);
  for (int rep = 0; rep < 2; ++rep) {
    Kokkos::deep_copy(wide, uq::bf16{kPoisonBf16});
    plan.run(in.q, in.cache, in.tables, in.lens, out);
    const auto got = to_host(out);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].bits, want[i].bits) << "rep " << rep << " i " << i;
    // the other half of the fused buffer is untouched
    const auto other = to_host(Kokkos::subview(wide, Kokkos::ALL, std::make_pair(0, d.hq), Kokkos::ALL));
    for (const auto& x : other) ASSERT_EQ(x.bits, kPoisonBf16);
  }
  EXPECT_TRUE(plan.status().ok());
  // Auto: the tuned path where this build and device have one, else generic.
  EXPECT_EQ(plan.path(), uq::impl::DecodeDispatch<Exec>::tuned_path(plan.device()));
}

TEST(Decode, PartitionsThenReduceEqualsRun) {
  DecodeCase c;
  c.seq_lens = {700, 20};
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(in.q, in.cache, in.tables, {}), {});
  DeviceView<uq::bf16***> a("a", d.num_seqs, d.hq, 256), b("b", d.num_seqs, d.hq, 256);
  plan.run(in.q, in.cache, in.tables, in.lens, a);
  plan.run_partitions(in.q, in.cache, in.tables, in.lens);
  plan.run_reduce(d.num_seqs, b);
  const auto x = to_host(a), y = to_host(b);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i].bits, y[i].bits);
  // Every partition wrote its l and m: l >= 0, m finite or -inf (l = 0 exactly then).
  const auto l = to_host(plan.partials().l), m = to_host(plan.partials().m);
  int empty = 0;
  for (std::size_t i = 0; i < l.size(); ++i) {
    ASSERT_TRUE(l[i] >= 0.0f);
    ASSERT_FALSE(std::isnan(m[i]));
    if (m[i] == -INFINITY) {
      ++empty;
      ASSERT_EQ(l[i], 0.0f);
    }
  }
  EXPECT_GT(empty, 0);  // the 20-token sequence leaves partitions empty
}

}  // namespace
