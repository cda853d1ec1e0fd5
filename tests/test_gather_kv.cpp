// uq::gather_kv (spec ultraquant.md §7) against the float64 reference, bit for bit: ragged
// kv_start_loc (empty sequences, positions past the written tokens, whose cache bytes are still
// dequantised exactly), block sizes 16 and 256, several KV heads, padded slots, strided outputs;
// bad block ids and positions past the table give zero rows and are counted; a bad kv_start_loc
// is a host error with check = true and masked, counted and never written outside the outputs
// with check = false.
#include "support/decode_case.hpp"

#include <gtest/gtest.h>

namespace {

using namespace uqtest;

struct GatherRun {
  std::vector<std::uint16_t> k, v;  // [T][Hk][256] bits
  uq::Status status;
};

// A cache (decode_case.hpp's: shuffled blocks, garbage where nothing was written) and kv_start_loc.
struct GatherCase {
  DecodeCase base;
  std::vector<std::int32_t> starts;
};

uqref::GatherCounts reference_gather(const GatherCase& c, const DecodeData& d, std::vector<std::uint16_t>& k,
                                     std::vector<std::uint16_t>& v) {
  uqref::GatherInputs in{d.cache.data(), d.num_blocks, c.base.block_size, c.base.num_kv_heads, c.base.slot_bytes,
                         d.tables.data(), d.max_blocks, c.starts.data(), d.num_seqs, c.starts.back()};
  return uqref::uq_gather_kv(in, k.data(), v.data());
}

// The outputs are the middle heads of [T, Hk + 2, 256] buffers (strided rows), poisoned; the
// poison of the other heads must survive.
GatherRun run_gather(const GatherCase& c, const DecodeData& d, const std::vector<std::int32_t>& starts,
                     const uq::GatherKvConfig& cfg) {
  const DeviceDecodeInputs in = decode_inputs_on_device(c.base, d);
  const int T = starts.back() > 0 ? starts.back() : 0, Hk = c.base.num_kv_heads;
  DeviceView<uq::bf16***> kbuf("kbuf", T, Hk + 2, 256), vbuf("vbuf", T, Hk + 2, 256);
  Kokkos::deep_copy(kbuf, uq::bf16{kPoisonBf16});
  Kokkos::deep_copy(vbuf, uq::bf16{kPoisonBf16});
  const auto heads = std::make_pair(1, Hk + 1);
  const auto k = Kokkos::subview(kbuf, Kokkos::ALL, heads, Kokkos::ALL);
  const auto v = Kokkos::subview(vbuf, Kokkos::ALL, heads, Kokkos::ALL);
  const auto locs = to_device(starts, "kv_start_loc", starts.size());
  uq::KvGather<Exec> gather(Exec(), cfg);
  gather.run(in.cache, in.tables, locs, k, v);
  GatherRun r;
  r.status = gather.status();
  for (const auto& x : to_host(k)) r.k.push_back(x.bits);
  for (const auto& x : to_host(v)) r.v.push_back(x.bits);
  for (auto side : {kbuf, vbuf}) {
    const auto all = to_host(side);
    for (int t = 0; t < T; ++t)
      for (int h : {0, Hk + 1})
        for (int e = 0; e < 256; ++e)
          EXPECT_EQ(all[(static_cast<std::size_t>(t) * (Hk + 2) + h) * 256 + e].bits, kPoisonBf16)
              << "wrote outside the output: row " << t << " head " << h;
  }
  EXPECT_EQ(gather.path(), uq::Path::Generic);
  return r;
}

TEST(GatherKv, RowsAreTheReferenceBitForBit) {
  for (int bs : {16, 256})
    for (int hk : {1, 2}) {
      GatherCase c;
      c.base.block_size = bs;
      c.base.num_kv_heads = hk;
      c.base.slot_bytes = hk == 2 ? 288 : 272;
      c.base.seq_lens = {300, 0, 17, 1000};
      c.base.max_blocks_per_seq = 1000 / bs + 2;
      c.base.seed = 11 + bs + hk;
      // Sequence 0 asks for fewer positions than it holds, 2 for more (garbage bytes), 1 for none.
      c.starts = {0, 250, 250, 250 + 40, 250 + 40 + 1000};
      const DecodeData d = build_decode_data(c.base);
      const int T = c.starts.back();
      std::vector<std::uint16_t> k(static_cast<std::size_t>(T) * hk * 256, 1), v = k;
      const uqref::GatherCounts rc = reference_gather(c, d, k, v);
      EXPECT_EQ(rc.bad_block_ids + rc.long_seq_lens + rc.bad_start_locs, 0u);
      const GatherRun r = run_gather(c, d, c.starts, {});
      EXPECT_TRUE(r.status.ok()) << r.status.describe();
      EXPECT_EQ(r.k, k) << "bs " << bs << " hk " << hk;
      EXPECT_EQ(r.v, v) << "bs " << bs << " hk " << hk;
    }
}

// Bad block ids and positions past the table's capacity: zero rows, counted once per (sequence,
// block) and per sequence; with check = true the call throws naming them.
TEST(GatherKv, BadBlocksAndLongRangesGiveZeroRowsAndCounts) {
  GatherCase c;
  c.base.block_size = 32;
  c.base.seq_lens = {100, 64};
  c.base.max_blocks_per_seq = 4;  // capacity 128
  c.base.bad_blocks = {{0, 1}, {1, 1}};
  c.starts = {0, 70, 70 + 150};  // sequence 0: 70 positions (block 1 bad); 1: 150 (> 128; block 1 bad)
  const DecodeData d = build_decode_data(c.base);
  std::vector<std::uint16_t> k(static_cast<std::size_t>(220) * 256, 1), v = k;
  const uqref::GatherCounts rc = reference_gather(c, d, k, v);
  EXPECT_EQ(rc.bad_block_ids, 2u);
  EXPECT_EQ(rc.long_seq_lens, 1u);
  uq::GatherKvConfig cfg;
  cfg.check = false;
  const GatherRun r = run_gather(c, d, c.starts, cfg);
  EXPECT_EQ(r.status[uq::Counter::bad_block_ids], 2u);
  EXPECT_EQ(r.status[uq::Counter::long_seq_lens], 1u);
  EXPECT_EQ(r.k, k);
  EXPECT_EQ(r.v, v);
  expect_error([&] { run_gather(c, d, c.starts, {}); },
               {"uq::gather_kv", "block_tables/kv_start_loc", "bad_block_ids=2", "long_seq_lens=1"});
}

// A bad kv_start_loc: a host error before anything runs with check = true; masked on the device
// and counted with check = false, the well-formed sequences' rows right when no range overlaps
// them, and nothing written outside the outputs (run_gather checks the guard heads).
TEST(GatherKv, BadKvStartLoc) {
  GatherCase c;
  c.base.seq_lens = {50, 60, 70};
  c.starts = {0, 50, 110, 180};
  const DecodeData d = build_decode_data(c.base);
  const std::vector<std::pair<std::vector<std::int32_t>, std::vector<std::string>>> host_errors = {
      {{3, 50, 110, 180}, {"kv_start_loc[0] == 0", "kv_start_loc[0] = 3"}},
      {{0, 60, 50, 180}, {"non-decreasing", "kv_start_loc[2] = 50 < kv_start_loc[1] = 60"}},
  };
  for (const auto& e : host_errors)  // (no structured bindings: C++17 lambdas cannot capture them)
    expect_error([&] { run_gather(c, d, e.first, {}); }, {"uq::gather_kv", "kv_start_loc", e.second[0], e.second[1]});
  // The last entry against T = k_out.extent(0), with outputs of 180 rows.
  {
    const DeviceDecodeInputs in = decode_inputs_on_device(c.base, d);
    DeviceView<uq::bf16***> k("k", 180, 1, 256), v("v", 180, 1, 256);
    const auto locs = to_device(std::vector<std::int32_t>{0, 50, 110, 170}, "kv_start_loc", 4);
    expect_error([&] { uq::gather_kv(in.cache, in.tables, locs, k, v); },
                 {"uq::gather_kv", "kv_start_loc[num_seqs] == 180", "kv_start_loc[3] = 170"});
  }
  uq::GatherKvConfig cfg;
  cfg.check = false;
  // Sequence 1 decreases: it and sequence 2 (whose range then starts inside sequence 0's) ... only
  // sequence 1 is malformed; rows 0 .. 39 are sequence 0's alone.
  const std::vector<std::int32_t> bad = {0, 60, 40, 180};
  const GatherRun r = run_gather(c, d, bad, cfg);
  EXPECT_EQ(r.status[uq::Counter::bad_start_locs], 1u);
  GatherCase good = c;
  std::vector<std::uint16_t> k(static_cast<std::size_t>(180) * 256, 1), v = k;
  reference_gather(good, d, k, v);
  for (std::size_t i = 0; i < static_cast<std::size_t>(40) * 256; ++i) {
    ASSERT_EQ(r.k[i], k[i]) << i;
    ASSERT_EQ(r.v[i], v[i]) << i;
  }
}

}  // namespace
