// The float64 reference's revision-3 parts (spec ultraquant.md §5.9, §7) against cases computed
// by hand and against its own one-token decode: several query tokens per sequence (causal
// visibility, rows that see nothing, malformed query_start_loc ranges) and the dequantising
// gather. Everything here is exact unless a tolerance is stated with its derivation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/reference_bf16.hpp"
#include "support/reference_inputs.hpp"
#include "uqref.hpp"

namespace {

using std::int32_t;
using std::int64_t;
using std::uint16_t;
using std::uint8_t;

constexpr double kInf = std::numeric_limits<double>::infinity();

using uqtest::bf;
using uqtest::random_bf16;

// A paged cache written by the reference writer, sequence b's tokens in blocks
// tables[b][0..]: the blocks of all sequences are distinct and in reverse order.
struct PagedCache {
  int Hk, qg, bs, max_blocks;
  int64_t num_blocks;
  std::vector<uint8_t> cache;
  std::vector<int32_t> tables;
  std::vector<int32_t> lens;

  PagedCache(int Hk_, int qg_, int bs_, int max_blocks_, const std::vector<int32_t>& lens_, std::mt19937& rng)
      : Hk(Hk_), qg(qg_), bs(bs_), max_blocks(max_blocks_), lens(lens_) {
    const int B = static_cast<int>(lens.size());
    num_blocks = static_cast<int64_t>(B) * max_blocks + 1;
    cache.assign(static_cast<std::size_t>(num_blocks * bs * Hk * 272), 0);
    tables.resize(static_cast<std::size_t>(B) * max_blocks);
    for (std::size_t i = 0; i < tables.size(); ++i) tables[i] = static_cast<int32_t>(num_blocks - 1 - i);
    for (int b = 0; b < B; ++b) {
      const int64_t L = lens[b];
      write(b, random_bf16(rng, L * Hk * 256, 1.0), random_bf16(rng, L * Hk * 256, 1.0), 0, L);
    }
  }

  // Tokens t0 .. t0 + n - 1 of sequence b (k, v: [n][Hk][256]).
  void write(int b, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, int64_t t0, int64_t n) {
    std::vector<int64_t> slots(static_cast<std::size_t>(n));
    for (int64_t t = 0; t < n; ++t)
      slots[t] = static_cast<int64_t>(tables[static_cast<std::size_t>(b) * max_blocks + (t0 + t) / bs]) * bs + (t0 + t) % bs;
    const uqref::WriteCounts c = uqref::uq_write_kv(k.data(), v.data(), slots.data(), n, Hk, cache.data(), num_blocks, bs, 272);
    ASSERT_EQ(c.bad_slots + c.nonfinite_rows, 0u);
  }

  const uint8_t* slot(int b, int64_t t, int h) const {
    const int64_t blk = tables[static_cast<std::size_t>(b) * max_blocks + t / bs];
    return cache.data() + ((blk * bs + t % bs) * Hk + h) * 272;
  }

  // q: dense [rows][Hk * qg][256]; qsl: nullptr for one query token per sequence.
  uqref::DecodeResult decode(const std::vector<uint16_t>& q, const std::vector<int32_t>& seq_lens, const int32_t* qsl,
                             int64_t T, double scale, int max_query_len = 0) const {
    uqref::DecodeInputs in =
        uqtest::reference_decode_inputs(q.data(), static_cast<int64_t>(Hk) * qg, qg, cache.data(), num_blocks, bs, Hk,
                                        272, tables.data(), max_blocks, seq_lens.data(),
                                        static_cast<int>(seq_lens.size()), scale);
    in.query_start_loc = qsl;
    in.num_query_tokens = static_cast<int>(T);
    in.max_query_len = max_query_len;
    return uqref::uq_decode(in);
  }
};

// One query token per sequence through query_start_loc = 0, 1, .., B is the one-token decode.
TEST(ReferenceUqQueries, OneTokenPerSequenceIsTheOneTokenDecode) {
  std::mt19937 rng(31);
  const PagedCache s(2, 6, 16, 5, {70, 0, 1, 33}, rng);
  const int B = 4, Hq = 12;
  const std::vector<uint16_t> q = random_bf16(rng, static_cast<std::size_t>(B) * Hq * 256, 1.0);
  const std::vector<int32_t> qsl = {0, 1, 2, 3, 4};
  const uqref::DecodeResult one = s.decode(q, s.lens, nullptr, B, 0.0625);
  const uqref::DecodeResult several = s.decode(q, s.lens, qsl.data(), B, 0.0625, 1);
  EXPECT_EQ(several.out, one.out);
  EXPECT_EQ(several.lse, one.lse);
  EXPECT_EQ(several.attended, one.attended);
  EXPECT_EQ(several.score_abs, one.score_abs);
  EXPECT_EQ(several.vmax, one.vmax);
  EXPECT_EQ(several.defined, std::vector<int>(B, 1));
  EXPECT_EQ(several.bad_start_locs, 0u);
}

// Query token j of a sequence with n_b new tokens and length L sees the first max(L - n_b + j + 1, 0)
// tokens: each row is the one-token decode of that prefix (the same double operations in the same
// order: equal bits), including rows that see nothing (n_b > L: out 0, lse -inf).
TEST(ReferenceUqQueries, EachQueryTokenIsTheDecodeOfItsPrefix) {
  std::mt19937 rng(32);
  const std::vector<int32_t> lens = {40, 2, 0, 17, 5};
  const std::vector<int32_t> qsl = {0, 3, 7, 7, 9, 10};  // n_b = 3, 4 (> L = 2), 0, 2, 1
  const PagedCache s(1, 8, 16, 3, lens, rng);
  const int Hq = 8;
  const int64_t T = qsl.back();
  const std::vector<uint16_t> q = random_bf16(rng, static_cast<std::size_t>(T) * Hq * 256, 1.0);
  const uqref::DecodeResult r = s.decode(q, lens, qsl.data(), T, 0.0625, 4);
  EXPECT_EQ(r.bad_start_locs, 0u);
  EXPECT_EQ(r.defined, std::vector<int>(T, 1));
  for (int b = 0; b < 5; ++b) {
    const int n = qsl[b + 1] - qsl[b];
    for (int j = 0; j < n; ++j) {
      const int64_t i = qsl[b] + j;
      const int32_t vis = std::max(lens[b] - n + j + 1, 0);
      // The one-token decode of sequence b alone, with length vis, query token i's q.
      std::vector<int32_t> one_lens(lens.size(), 0);
      one_lens[b] = vis;
      std::vector<uint16_t> q1(lens.size() * Hq * 256, 0);
      std::copy_n(&q[static_cast<std::size_t>(i) * Hq * 256], Hq * 256, &q1[static_cast<std::size_t>(b) * Hq * 256]);
      const uqref::DecodeResult one = s.decode(q1, one_lens, nullptr, 5, 0.0625);
      for (int h = 0; h < Hq; ++h) {
        const std::size_t row = static_cast<std::size_t>(i) * Hq + h, one_row = static_cast<std::size_t>(b) * Hq + h;
        ASSERT_EQ(r.attended[row], vis) << "seq " << b << " token " << j;
        ASSERT_EQ(r.lse[row], one.lse[one_row]) << "seq " << b << " token " << j;
        if (vis == 0) EXPECT_EQ(r.lse[row], -kInf);
        for (int d = 0; d < 256; ++d) ASSERT_EQ(r.out[row * 256 + d], one.out[one_row * 256 + d]);
      }
    }
  }
}

// Two tokens with hand-made keys (as ReferenceUqDecode.TwoTokensWithHandComputedWeights: K rows of
// constant 0.375 and 0.1875 rotate to 6 e_0 and 3 e_0, q = 1/16 everywhere rotates to e_0, so the
// scores are 6 scale and 3 scale; scale = ln(2)/3 gives weights 2 : 1). Decoded as the two new
// tokens of their sequence: row 0 sees token 0 alone (out = v̂_0 exactly, lse = 6 scale), row 1
// both (out = (2 v̂_0 + v̂_1) / 3, lse = log(e^(6 scale) + e^(3 scale)) = 3 scale + log 3). As three
// query tokens (n_b = 3 > L = 2) the first row sees nothing.
TEST(ReferenceUqQueries, HandComputedCausalRows) {
  std::mt19937 rng(33);
  PagedCache s(1, 6, 16, 1, {0}, rng);
  s.lens = {2};
  std::vector<uint16_t> k(2 * 256);
  std::fill(k.begin(), k.begin() + 256, bf(0.375f));
  std::fill(k.begin() + 256, k.end(), bf(0.1875f));
  s.write(0, k, random_bf16(rng, 2 * 256, 2.0), 0, 2);
  const double scale = std::log(2.0) / 3;
  double v0[256], v1[256];
  uqref::uq_dequant_v(s.slot(0, 0, 0), v0);
  uqref::uq_dequant_v(s.slot(0, 1, 0), v1);
  for (int n : {2, 3}) {
    const std::vector<uint16_t> q(static_cast<std::size_t>(n) * 6 * 256, bf(0.0625f));
    const std::vector<int32_t> qsl = {0, n};
    const uqref::DecodeResult r = s.decode(q, s.lens, qsl.data(), n, scale);
    const int first = n - 2;  // the row that sees token 0 alone
    for (int hq = 0; hq < 6; ++hq) {
      if (n == 3) {
        EXPECT_EQ(r.attended[hq], 0);
        EXPECT_EQ(r.lse[hq], -kInf);
        for (int d = 0; d < 256; ++d) ASSERT_EQ(r.out[hq * 256 + d], 0.0);
      }
      const std::size_t a = static_cast<std::size_t>(first) * 6 + hq, b = a + 6;
      EXPECT_EQ(r.attended[a], 1);
      EXPECT_EQ(r.attended[b], 2);
      // Scores: exact products of exact values times scale, one double rounding each.
      EXPECT_NEAR(r.lse[a], 6 * scale, 1e-15);
      EXPECT_NEAR(r.lse[b], 3 * scale + std::log(3.0), 1e-14);
      for (int d = 0; d < 256; ++d) {
        ASSERT_EQ(r.out[a * 256 + d], v0[d]);  // one token: weight exactly 1
        // exp and two products/one sum in double: a few ulps of max|v|.
        ASSERT_NEAR(r.out[b * 256 + d], (2 * v0[d] + v1[d]) / 3, 1e-14 * std::max(std::fabs(v0[d]), std::fabs(v1[d])));
      }
    }
  }
}

// §5.9's per-sequence rule: a malformed range is skipped and counted; rows covered by exactly one
// well-formed range keep their meaning, the others are flagged undefined.
TEST(ReferenceUqQueries, MalformedRangesAreSkippedAndCounted) {
  std::mt19937 rng(34);
  const std::vector<int32_t> lens = {30, 20, 10};
  const PagedCache s(1, 6, 16, 2, lens, rng);
  const int64_t T = 6;
  const std::vector<uint16_t> q = random_bf16(rng, static_cast<std::size_t>(T) * 6 * 256, 1.0);
  const std::vector<int32_t> good = {0, 2, 4, 6};
  const uqref::DecodeResult want = s.decode(q, lens, good.data(), T, 0.0625, 2);
  struct Case {
    std::vector<int32_t> qsl;
    int max_len;
    std::uint64_t bad;
    std::vector<int> defined;
  };
  const Case cases[] = {
      {{1, 2, 4, 6}, 2, 1, {0, 0, 1, 1, 1, 1}},  // qsl[0] != 0: sequence 0 skipped
      {{0, 2, 4, 5}, 2, 1, {1, 1, 1, 1, 0, 0}},  // last entry != T
      {{0, 4, 3, 6}, 0, 1, {1, 1, 1, 2, 1, 1}},  // decreasing: sequence 1 skipped, rows 3 covered twice
      {{0, 2, 4, 6}, 1, 3, {0, 0, 0, 0, 0, 0}},  // n_b above max_query_len
      {{0, -2, 4, 6}, 0, 2, {0, 0, 0, 0, 1, 1}}, // negative entry: sequences 0 and 1
      {{0, 2, 9, 6}, 0, 2, {1, 1, 0, 0, 0, 0}},  // entry past T: sequences 1 and 2
  };
  for (const Case& c : cases) {
    const uqref::DecodeResult r = s.decode(q, lens, c.qsl.data(), T, 0.0625, c.max_len);
    EXPECT_EQ(r.bad_start_locs, c.bad) << c.qsl[0] << c.qsl[1] << c.qsl[2] << c.qsl[3];
    for (int64_t i = 0; i < T; ++i) {
      EXPECT_EQ(r.defined[i], c.defined[i] == 1 ? 1 : 0) << "row " << i;
      // A row of a skipped sequence that no other range covers is untouched: 0 and lse -inf.
      if (c.defined[i] == 0)
        for (int h = 0; h < 6; ++h) EXPECT_EQ(r.lse[static_cast<std::size_t>(i) * 6 + h], -kInf);
    }
  }
  // Decreasing case: rows 0, 1 (sequence 0 = [0, 4)) and 4, 5 (sequence 2 = [3, 6)) are defined.
  const std::vector<int32_t> dec = {0, 4, 3, 6};
  const uqref::DecodeResult r = s.decode(q, lens, dec.data(), T, 0.0625, 0);
  // Sequence 0 now has 4 query tokens: its row 0 sees 30 - 4 + 1 = 27 tokens.
  EXPECT_EQ(r.attended[0], 27);
  EXPECT_EQ(r.attended[5 * 6], 10);  // sequence 2's last token sees its whole length
  EXPECT_EQ(want.attended[0], 29);
}

// ================================================================ gather (§7)

// Every row is the bf16 of the dequantised slot (exact: FP4 values times powers of two within
// range); absent positions (bad block ids, past the table's capacity) are zero rows; a malformed
// range leaves its rows as they were.
TEST(ReferenceUqGather, RowsAreTheDequantisedSlots) {
  std::mt19937 rng(35);
  const std::vector<int32_t> lens = {40, 16, 5};
  PagedCache s(2, 6, 16, 3, lens, rng);
  const int Hk = 2;
  // Sequence 1's block 1 is bad; it asks for 20 positions (16 .. 19 in the bad block).
  s.tables[1 * 3 + 1] = -4;
  const uint16_t poison = 0x7FC1;
  // Gathers with kv_start_loc `starts` (T its last entry) into k and v, poisoned first.
  const auto gather = [&](const std::vector<int32_t>& starts, std::vector<uint16_t>& k_out, std::vector<uint16_t>& v_out) {
    const uqref::GatherInputs in{s.cache.data(), s.num_blocks, 16, Hk, 272, s.tables.data(), 3, starts.data(), 3,
                                 starts.back()};
    k_out.assign(static_cast<std::size_t>(starts.back()) * Hk * 256, poison);
    v_out = k_out;
    return uqref::uq_gather_kv(in, k_out.data(), v_out.data());
  };
  const std::vector<int32_t> locs = {0, 40, 60, 65};
  std::vector<uint16_t> k, v;
  const uqref::GatherCounts c = gather(locs, k, v);
  EXPECT_EQ(c.bad_block_ids, 1u);
  EXPECT_EQ(c.long_seq_lens, 0u);
  EXPECT_EQ(c.bad_start_locs, 0u);
  for (int b = 0; b < 3; ++b)
    for (int64_t t = 0; t < locs[b + 1] - locs[b]; ++t)
      for (int h = 0; h < Hk; ++h) {
        const std::size_t row = (static_cast<std::size_t>(locs[b] + t) * Hk + h) * 256;
        double kd[256], vd[256];
        const bool absent = b == 1 && t >= 16;
        if (!absent) {
          uqref::uq_dequant_k(s.slot(b, t, h), kd);
          uqref::uq_dequant_v(s.slot(b, t, h), vd);
        }
        for (int d = 0; d < 256; ++d) {
          ASSERT_EQ(uqref::bf16_value(k[row + d]), absent ? 0.0 : kd[d]) << b << " " << t << " " << h << " " << d;
          ASSERT_EQ(uqref::bf16_value(v[row + d]), absent ? 0.0 : vd[d]) << b << " " << t << " " << h << " " << d;
        }
      }

  // Past the capacity (3 blocks x 16 = 48): positions 48 .. 49 are zero rows, counted once.
  std::vector<uint16_t> k2, v2;
  const uqref::GatherCounts c2 = gather({0, 50, 50, 50}, k2, v2);
  EXPECT_EQ(c2.long_seq_lens, 1u);
  EXPECT_EQ(c2.bad_block_ids, 0u);
  for (std::size_t i = 48 * Hk * 256; i < k2.size(); ++i) ASSERT_EQ(k2[i] | v2[i], 0);
  for (std::size_t i = 0; i < 40 * Hk * 256; ++i) ASSERT_EQ(k2[i], k[i]);

  // Malformed: sequence 0 ends past T = 35 and sequence 1 decreases: both skipped, their rows
  // left alone; sequence 2 = [30, 35) is well-formed and writes its rows.
  std::vector<uint16_t> k3, v3;
  const uqref::GatherCounts c3 = gather({0, 40, 30, 35}, k3, v3);
  EXPECT_EQ(c3.bad_start_locs, 2u);
  const std::size_t seq2 = static_cast<std::size_t>(30) * Hk * 256;
  for (std::size_t i = 0; i < seq2; ++i) ASSERT_EQ(k3[i] & v3[i], poison);
  for (std::size_t i = seq2; i < k3.size(); ++i) {
    ASSERT_EQ(k3[i], k[i + 30 * Hk * 256]);  // the first run's rows 60 .. 64
    ASSERT_EQ(v3[i], v[i + 30 * Hk * 256]);
  }
}

}  // namespace
