// Revision 2 of the split-K decode (spec ultraquant.md §5) through DecodePlan on the generic
// path: P = 1 is one kernel that writes out itself, bit-identical to the two-stage path;
// partitions without tokens write only l and m; the lse output; a workspace the caller owns;
// block tables narrower than the plan's. Launches are counted through Kokkos' tools
// interface (every generic kernel is a named parallel_for), not taken from the plan's word.
#include "support/decode_case.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace uqtest;

// ---------------------------------------------------------------- launch counting
int g_decode_launches = 0;

void count_launch(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  if (std::strncmp(name, "uq::decode::", 12) == 0) ++g_decode_launches;
}

// The decode kernels f launches (parallel_fors named uq::decode::*).
template <class F>
int decode_launches(F&& f) {
  g_decode_launches = 0;
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(count_launch);
  f();
  Kokkos::fence();
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
  return g_decode_launches;
}

uq::DecodeConfig config_of(const DecodeCase& c, int partitions) {
  uq::DecodeConfig cfg;
  cfg.softmax_scale = c.scale;
  cfg.q_rotated = c.q_rotated;
  cfg.partitions = partitions;
  cfg.backend = uq::Backend::Generic;
  cfg.check = false;
  return cfg;
}

std::vector<std::uint32_t> float_bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> bits(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(&bits[i], &v[i], 4);
  return bits;
}

// A plan's outputs for a case: out bits and lse bits.
struct Outputs {
  std::vector<std::uint16_t> out;
  std::vector<std::uint32_t> lse;
};

template <class Plan, class In>
Outputs run_plan(const Plan& plan, const In& in, bool two_stages) {
  const int B = static_cast<int>(in.q.extent(0)), H = static_cast<int>(in.q.extent(1));
  DeviceView<uq::bf16***> out("out", B, H, 256);
  DeviceView<float**> lse("lse", B, H);
  Kokkos::deep_copy(out, uq::bf16{kPoisonBf16});
  Kokkos::deep_copy(lse, kPoisonLse);
  if (two_stages) {
    plan.run_partitions(in.q, in.cache, in.tables, in.lens);
    plan.run_reduce(B, out, lse);
  } else {
    plan.run(in.q, in.cache, in.tables, in.lens, out, lse);
  }
  Outputs o;
  for (const auto& x : to_host(out)) o.out.push_back(x.bits);
  o.lse = float_bits(to_host(lse));
  return o;
}

void expect_same_bits(const Outputs& a, const Outputs& b, const std::string& what) {
  ASSERT_EQ(a.out.size(), b.out.size());
  ASSERT_EQ(a.lse.size(), b.lse.size());
  for (std::size_t i = 0; i < a.out.size(); ++i) ASSERT_EQ(a.out[i], b.out[i]) << what << ": out element " << i;
  for (std::size_t i = 0; i < a.lse.size(); ++i) ASSERT_EQ(a.lse[i], b.lse[i]) << what << ": lse element " << i;
}

// ---------------------------------------------------------------- P = 1

TEST(DecodeSplitK, OnePartitionIsOneKernelAndEqualsTheTwoStagePath) {
  DecodeCase c;
  c.qg = 8;
  c.num_kv_heads = 2;
  c.block_size = 32;
  c.seq_lens = {0, 1, 100, 255, 256, 3000};
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(in.q, in.cache, in.tables, {}), config_of(c, 1));
  ASSERT_EQ(plan.partitions(), 1);
  EXPECT_EQ(plan.launches_per_run(), 1);

  // run() touches no partial result: poisoned before, unchanged after.
  Kokkos::deep_copy(plan.partials().out, uq::bf16{kPoisonBf16});
  Kokkos::deep_copy(plan.partials().l, 7.0f);
  Outputs direct;
  EXPECT_EQ(decode_launches([&] { direct = run_plan(plan, in, false); }), 1);
  for (const auto& x : to_host(plan.partials().out)) ASSERT_EQ(x.bits, kPoisonBf16);
  for (float l : to_host(plan.partials().l)) ASSERT_EQ(l, 7.0f);

  // The two stages at P = 1: the partition kernel writes partial rows, the reducer combines
  // one partition per row. Spec §5: the same bits.
  Outputs staged;
  EXPECT_EQ(decode_launches([&] { staged = run_plan(plan, in, true); }), 2);
  expect_same_bits(direct, staged, "P = 1 direct vs partition kernel + reducer");

  // And both match the reference.
  c.partitions = 1;
  check_decode_lse(c, [&](auto q, auto cache, auto tables, auto lens, auto out, auto lse) {
    plan.run(q, cache, tables, lens, out, lse);
  });
}

TEST(DecodeSplitK, OnePartitionEqualsManyWhenOneHoldsAllTokens) {
  // Every sequence fits the first tile-group: with P > 1 partition 0 holds all tokens and
  // the others are empty, so the reducer combines one partition: bit-identical to P = 1.
  for (int qg : {6, 16}) {
    DecodeCase c;
    c.qg = qg;
    c.block_size = 16;
    c.seq_lens = {0, 1, 17, 200, 256};
    c.max_blocks_per_seq = 40;  // 640 tokens: the table is wider than the lengths
    c.seed = 40 + qg;
    const DecodeData d = build_decode_data(c);
    const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
    const uq::DecodeShape shape = uq::decode_shape_of(in.q, in.cache, in.tables, {});
    const uq::DecodePlan<Exec> one(Exec(), shape, config_of(c, 1)), four(Exec(), shape, config_of(c, 4));
    EXPECT_EQ(four.launches_per_run(), 2);
    Outputs a, b;
    EXPECT_EQ(decode_launches([&] { a = run_plan(one, in, false); }), 1);
    EXPECT_EQ(decode_launches([&] { b = run_plan(four, in, false); }), 2);
    expect_same_bits(a, b, "P = 1 vs P = 4, qg " + std::to_string(qg));
  }
}

// ---------------------------------------------------------------- empty partitions

TEST(DecodeSplitK, EmptyPartitionsWriteOnlyLAndM) {
  DecodeCase c;
  c.qg = 6;
  c.num_kv_heads = 2;
  c.block_size = 64;
  c.seq_lens = {20, 3000, 0, 600};
  c.max_blocks_per_seq = 64;  // 4096 tokens: P = 32 by default (TGPP 1)
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(in.q, in.cache, in.tables, {}), config_of(c, 0));
  ASSERT_GT(plan.partitions(), 1);
  const auto& partials = plan.partials();
  Kokkos::deep_copy(partials.out, uq::bf16{kPoisonBf16});
  Kokkos::deep_copy(partials.l, 7.0f);
  Kokkos::deep_copy(partials.m, 7.0f);
  plan.run_partitions(in.q, in.cache, in.tables, in.lens);
  const auto out = to_host(partials.out);
  const auto l = to_host(partials.l), m = to_host(partials.m);
  std::size_t empty = 0, full = 0;
  for (std::size_t row = 0; row < l.size(); ++row) {
    ASSERT_NE(l[row], 7.0f) << "row " << row << ": l not written";
    ASSERT_NE(m[row], 7.0f) << "row " << row << ": m not written";
    int poisoned = 0;
    for (int e = 0; e < 256; ++e) poisoned += out[row * 256 + e].bits == kPoisonBf16;
    if (l[row] == 0.0f) {
      ++empty;
      ASSERT_EQ(m[row], -INFINITY) << "row " << row;
      ASSERT_EQ(poisoned, 256) << "row " << row << ": an empty partition wrote its partial row";
    } else {
      ++full;
      ASSERT_GT(l[row], 0.0f);
      ASSERT_EQ(poisoned, 0) << "row " << row << ": a partition with tokens left its row unwritten";
    }
  }
  // (20 tokens: 1 partition; 3000: 12; 0: none; 600: 3) x 2 heads x 6 rows
  EXPECT_EQ(full, static_cast<std::size_t>((1 + 12 + 0 + 3) * 2 * 6));
  EXPECT_EQ(empty, l.size() - full);
  // The reducer reads only the written rows: the result is the reference's.
  check_decode_lse(c, [&](auto, auto, auto, auto, auto out_view, auto lse) { plan.run_reduce(d.num_seqs, out_view, lse); });
}

// ---------------------------------------------------------------- lse

TEST(DecodeSplitK, LseAnyLayoutOrNoneAndItsChecks) {
  DecodeCase c;
  c.qg = 16;
  c.seq_lens = {513, 0, 64};
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(in.q, in.cache, in.tables, {}), config_of(c, 0));
  DeviceView<uq::bf16***> out("out", d.num_seqs, d.hq, 256), out2("out2", d.num_seqs, d.hq, 256);
  // A default-constructed lse view means "no lse": same out, nothing else written.
  plan.run(in.q, in.cache, in.tables, in.lens, out);
  plan.run(in.q, in.cache, in.tables, in.lens, out2, LseView());
  const auto a = to_host(out), b = to_host(out2);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].bits, b[i].bits);
  // A dense [B, Hq] lse and a column-major one give the same values.
  DeviceView<float**> dense("dense", d.num_seqs, d.hq);
  Kokkos::View<float**, Kokkos::LayoutLeft, Mem> left("left", d.num_seqs, d.hq);
  plan.run(in.q, in.cache, in.tables, in.lens, out, dense);
  plan.run(in.q, in.cache, in.tables, in.lens, out, left);
  const auto x = float_bits(to_host(dense)), y = float_bits(to_host(left));
  ASSERT_EQ(x, y);
  // The convenience overloads, with and without the execution space, give the same bits.
  uq::DecodeConfig cfg = config_of(c, 0);
  cfg.check = true;
  DeviceView<float**> lse_a("lse_a", d.num_seqs, d.hq), lse_b("lse_b", d.num_seqs, d.hq);
  uq::decode(Exec(), in.q, in.cache, in.tables, in.lens, out2, lse_a, cfg);
  ASSERT_EQ(float_bits(to_host(lse_a)), x);
  uq::decode(in.q, in.cache, in.tables, in.lens, out2, lse_b, cfg);
  ASSERT_EQ(float_bits(to_host(lse_b)), x);
  uq::decode(Exec(), in.q, in.cache, in.tables, in.lens, out2, cfg);
  const auto c2 = to_host(out2);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].bits, c2[i].bits);

  DeviceView<float**> wrong("wrong", d.num_seqs, d.hq + 1);
  expect_error([&] { plan.run(in.q, in.cache, in.tables, in.lens, out, wrong); },
               {"uq::decode", "argument 'lse'", "extent(1) == 16"});
  DeviceView<float**> short_lse("short", d.num_seqs - 1, d.hq);
  expect_error([&] { plan.run(in.q, in.cache, in.tables, in.lens, out, short_lse); },
               {"uq::decode", "argument 'lse'", "extent(0) == 3"});
}

// ---------------------------------------------------------------- caller-owned workspace

TEST(DecodeSplitK, CallerWorkspaceGivesTheSameBitsAndStaysInside) {
  const DecodeCase c = plan_reuse_case(700);
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  const uq::DecodeShape shape{6, c.num_kv_heads, c.qg, c.block_size, d.max_blocks + 3};
  const uq::DecodeConfig cfg = config_of(c, 0);
  const std::size_t bytes = uq::DecodePlan<Exec>::workspace_bytes(shape, cfg);
  const uq::DecodePlan<Exec> own(Exec(), shape, cfg);
  // rows x (256 bf16 + l + m) plus the counters, each region rounded to 256 bytes
  const std::size_t rows = static_cast<std::size_t>(6) * c.num_kv_heads * own.partitions() * c.qg;
  EXPECT_GE(bytes, rows * (512 + 8) + 8 * uq::kNumCounters);
  EXPECT_LE(bytes, rows * (512 + 8) + 8 * uq::kNumCounters + 4 * 256);

  // The caller's buffer: 64 guard bytes on each side of the workspace, poisoned.
  constexpr std::size_t kGuard = 64;
  DeviceView<std::uint8_t*> buffer("buffer", bytes + 2 * kGuard);
  Kokkos::deep_copy(buffer, std::uint8_t{0xA5});
  const auto workspace = Kokkos::subview(buffer, std::make_pair(kGuard, kGuard + bytes));
  const uq::DecodePlan<Exec> mine(Exec(), shape, cfg, workspace);
  EXPECT_EQ(mine.partitions(), own.partitions());
  const Outputs a = run_plan(own, in, false);
  const Outputs b = run_plan(mine, in, false);
  const Outputs b2 = run_plan(mine, in, true);
  expect_same_bits(a, b, "own vs caller workspace");
  expect_same_bits(a, b2, "own vs caller workspace, two stages");
  const auto host = to_host(buffer);
  for (std::size_t i = 0; i < kGuard; ++i) {
    ASSERT_EQ(host[i], 0xA5) << "byte " << i << " before the workspace was written";
    ASSERT_EQ(host[kGuard + bytes + i], 0xA5) << "byte " << i << " after the workspace was written";
  }
  EXPECT_TRUE(mine.status().ok());

  // Other byte types; the counters live in the workspace (a data error shows in status()).
  Kokkos::View<std::byte*, Mem> as_bytes(reinterpret_cast<std::byte*>(workspace.data()), bytes);
  const uq::DecodePlan<Exec> byte_plan(Exec(), shape, cfg, as_bytes);
  expect_same_bits(a, run_plan(byte_plan, in, false), "std::byte workspace");
  EXPECT_TRUE(byte_plan.status().ok());
}

TEST(DecodeSplitK, CallerWorkspaceTooSmallMisalignedOrAliasedIsAnError) {
  const uq::DecodeShape shape{4, 1, 6, 64, 100};
  const uq::DecodeConfig cfg;
  const std::size_t bytes = uq::DecodePlan<Exec>::workspace_bytes(shape, cfg);
  DeviceView<std::uint8_t*> buffer("buffer", bytes + 64);
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), shape, cfg, Kokkos::subview(buffer, std::pair<std::size_t, std::size_t>(0, bytes - 1))); },
               {"uq::DecodePlan", "argument 'workspace'", "at least workspace_bytes(shape, config) = " + std::to_string(bytes),
                "got " + std::to_string(bytes - 1) + " bytes"});
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 16, 0u);
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), shape, cfg, Kokkos::subview(buffer, std::pair<std::size_t, std::size_t>(8, 8 + bytes))); },
               {"uq::DecodePlan", "argument 'workspace'", "multiple of 16 bytes", "address % 16 = 8"});
  Kokkos::View<std::uint8_t*, Kokkos::LayoutStride, Mem> strided(buffer.data(), Kokkos::LayoutStride(bytes / 2, 2));
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), shape, cfg, strided); },
               {"uq::DecodePlan", "argument 'workspace'", "contiguous"});
  expect_error([&] { uq::DecodePlan<Exec>::workspace_bytes(uq::DecodeShape{4, 1, 7, 64, 100}, cfg); },
               {"uq::decode", "shape.qg"});

  // Outputs must not overlap the caller's workspace.
  DecodeCase c;
  c.seq_lens = {70, 5};
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  const uq::DecodeShape s2 = uq::decode_shape_of(in.q, in.cache, in.tables, {});
  const std::size_t b2 = uq::DecodePlan<Exec>::workspace_bytes(s2, cfg);
  DeviceView<std::uint8_t*> ws("ws", b2);
  const uq::DecodePlan<Exec> plan(Exec(), s2, cfg, ws);
  DeviceView<uq::bf16***> out("out", d.num_seqs, d.hq, 256);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> lse_in_ws(reinterpret_cast<float*>(ws.data()), d.num_seqs, d.hq);
  expect_error([&] { plan.run(in.q, in.cache, in.tables, in.lens, out, lse_in_ws); },
               {"uq::decode", "argument 'lse'", "disjoint from 'workspace'"});
  ASSERT_GE(b2, static_cast<std::size_t>(d.num_seqs) * d.hq * 512);
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> out_in_ws(reinterpret_cast<uq::bf16*>(ws.data()), d.num_seqs,
                                                                d.hq, 256);
  expect_error([&] { plan.run(in.q, in.cache, in.tables, in.lens, out_in_ws); },
               {"uq::decode", "argument 'out'", "disjoint from 'workspace'"});
}

// ---------------------------------------------------------------- narrower block tables

TEST(DecodeSplitK, NarrowerTablesKeepThePlansGridAndClampToTheirWidth) {
  DecodeCase c;
  c.qg = 8;
  c.block_size = 16;
  c.seq_lens = {300, 17, 0, 160};
  c.max_blocks_per_seq = 20;  // the live table: 320 tokens
  // sequence 3 claims more tokens than its table holds: clamped to 320, counted
  c.raw_seq_len_overrides = {{3, 20 * 16 + 50}};
  const uq::DecodeShape shape{8, 1, c.qg, c.block_size, 2000};  // the engine's worst case: 32k tokens
  const uq::DecodeConfig cfg = config_of(c, 0);
  const uq::DecodePlan<Exec> plan(Exec(), shape, cfg);
  EXPECT_EQ(plan.partitions(), uq::choose_partitions(8, 2000, c.block_size).partitions);
  EXPECT_GT(plan.partitions(), uq::choose_partitions(8, 20, c.block_size).partitions);
  check_decode_lse(c, [&](auto q, auto cache, auto tables, auto lens, auto out, auto lse) {
    ASSERT_EQ(tables.extent(1), 20u);
    plan.reset_status();
    plan.run(q, cache, tables, lens, out, lse);
  });
  EXPECT_EQ(plan.status()[uq::Counter::long_seq_lens], 1u);

  // Wider than the plan: an error naming the limit.
  DeviceView<std::int32_t**> wide("wide", 4, 2001);
  DeviceView<std::int32_t*> lens("lens", 4);
  DeviceView<uq::bf16***> q("q", 4, 8, 256), out("out", 4, 8, 256);
  DeviceView<std::uint8_t****> cache("cache", 2, 16, 1, 272);
  expect_error([&] { plan.run(q, cache, wide, lens, out); },
               {"uq::decode", "argument 'block_tables'", "extent(1) <= the plan's max_blocks_per_seq = 2000", "got 2001"});
}

}  // namespace
