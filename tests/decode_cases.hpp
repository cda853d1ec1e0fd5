// The decode data cases, written once and stamped per decode path (kokkos-kernels'
// unit_test/Test_Blas2_gemv.hpp style): each case runs on the stamp's path through the
// runner interface of support/decode_path.hpp and is checked against the float64 reference
// (out and lse, a transposed [B, Hq] view) within that path's tolerance. A stamp file defines
//
//   UQ_DECODE_PATH     the path class (support/decode_path.hpp)
//   UQ_DECODE_PREFIX   the prefix of the suites' names: nothing (Decode, DecodeMatrix, ...),
//                      Sm90 (Sm90Decode, ...), Emu (EmuDecode, ...)
//
// and includes this file once, after the path's definition.
// The cases: QG x block sizes over a ragged batch (0, 1, 15, 16, 17, 255, 256, 257, ...,
// shuffled tables, strided q), forced partition counts (P = 1: one kernel, no reducer), raw
// and pre-rotated q, several KV heads with a dense q, padded slots, queries saturating E4M3 and
// other softmax scales, large and tiny cache values. What only one path has (bad data and its
// counters, misaligned or re-laid-out views, launch checks, graphs, plan reuse) stays in that
// path's own files.
#include "support/decode_path.hpp"

#include <gtest/gtest.h>

#if !defined(UQ_DECODE_PATH) || !defined(UQ_DECODE_PREFIX)
#error "a decode stamp file defines UQ_DECODE_PATH and UQ_DECODE_PREFIX before including decode_cases.hpp"
#endif

#define UQ_DECODE_CAT_(a, b) a##b
#define UQ_DECODE_CAT(a, b) UQ_DECODE_CAT_(a, b)
// The stamp's name of a suite: UQ_DECODE_SUITE(Decode) is Decode, Sm90Decode or EmuDecode.
#define UQ_DECODE_SUITE(name) UQ_DECODE_CAT(UQ_DECODE_PREFIX, name)
// INSTANTIATE_TEST_SUITE_P pastes its suite argument unexpanded: expand it first.
#define UQ_DECODE_INSTANTIATE(prefix, suite, ...) INSTANTIATE_TEST_SUITE_P(prefix, suite, __VA_ARGS__)

namespace {

using namespace uqtest;

// One case on the stamp's path.
#define UQ_DECODE_RUN(c) check_on_path<UQ_DECODE_PATH>(c)

class UQ_DECODE_SUITE(DecodeMatrix) : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(UQ_DECODE_SUITE(DecodeMatrix), RaggedBatchMatchesReference) {
  const int qg = std::get<0>(GetParam()), bs = std::get<1>(GetParam());
  UQ_DECODE_RUN(ragged_matrix_case(qg, bs, 3001, 100 + qg * 7 + bs));
}

UQ_DECODE_INSTANTIATE(QgBlock, UQ_DECODE_SUITE(DecodeMatrix),
                      ::testing::Combine(::testing::Values(6, 8, 16), ::testing::Values(16, 32, 64, 128, 256)));

class UQ_DECODE_SUITE(DecodePartitions) : public ::testing::TestWithParam<int> {};

// 1 .. 512 partitions, powers of two or not: one partition walking every tile-group to one per
// tile-group with most of them empty; at QG 8, then 6 and 16 (one tile-group per warp and
// several per partition, both row blocks of the sm90 kernel).
TEST_P(UQ_DECODE_SUITE(DecodePartitions), ForcedPartitionCountMatchesReference) {
  DecodeCase c = forced_partitions_case(GetParam(), 7 + GetParam());
  UQ_DECODE_RUN(c);
  for (int qg : {6, 16}) {
    c.qg = qg;
    c.seed += 1000;
    UQ_DECODE_RUN(c);
  }
}

UQ_DECODE_INSTANTIATE(P, UQ_DECODE_SUITE(DecodePartitions), ::testing::Values(1, 2, 3, 7, 16, 64, 255, 512));

TEST(UQ_DECODE_SUITE(Decode), PreRotatedQueryMatchesReference) {
  for (int qg : {6, 16}) {
    DecodeCase c;
    c.qg = qg;
    c.q_rotated = true;
    c.seq_lens = {257, 1, 1500};
    c.q_sigma = 0.3f;
    c.seed = 40 + qg;
    UQ_DECODE_RUN(c);
  }
}

TEST(UQ_DECODE_SUITE(Decode), SeveralKvHeadsAndDenseQuery) {
  DecodeCase c;
  c.qg = 6;
  c.num_kv_heads = 3;
  c.block_size = 16;
  c.strided_q = false;
  c.seq_lens = {33, 700, 15};
  UQ_DECODE_RUN(c);
  c.qg = 16;
  c.num_kv_heads = 2;
  c.block_size = 128;
  c.seed = 5;
  UQ_DECODE_RUN(c);
}

// 16-, 4- and 16-byte aligned slot starts: the paths' wide and narrow loads (sm90: the cp.async
// and the word-copy kernels).
TEST(UQ_DECODE_SUITE(Decode), PaddedSlotsAtEveryAlignment) {
  for (int qg : {6, 8})
    for (int slot_bytes : {288, 276, 400}) {
      DecodeCase c;
      c.qg = qg;
      c.slot_bytes = slot_bytes;
      c.num_kv_heads = 2;
      c.seq_lens = {300, 65};
      c.seed = static_cast<std::uint64_t>(slot_bytes);
      UQ_DECODE_RUN(c);
    }
}

// |q_rot| well above 448 must saturate the E4M3 rounding (the converter alone would give NaN);
// a large softmax scale makes attention peaked, a small one nearly uniform.
TEST(UQ_DECODE_SUITE(Decode), LargeQueriesSaturateE4M3AndOtherScales) {
  for (int qg : {8, 16})
    for (float scale : {1.0f / 16.0f, 0.75f, 1e-3f}) {
      DecodeCase c;
      c.qg = qg;
      c.q_sigma = scale > 0.5f ? 1.0f : 600.0f;
      c.scale = scale;
      c.seq_lens = {513, 64};
      c.seed = static_cast<std::uint64_t>(scale * 1e4);
      UQ_DECODE_RUN(c);
    }
}

// sigma 100: UE8M0 bytes above 128 (group scales 2^2 .. 2^6), where 2^(b - 1) would overflow
// bf16; sigma 1e-20: bytes near 60. The small softmax scale keeps attention spread out.
TEST(UQ_DECODE_SUITE(Decode), LargeAndTinyCacheValues) {
  for (float sigma : {100.0f, 1e-20f}) {
    DecodeCase c;
    c.qg = 6;
    c.kv_sigma = sigma;
    c.scale = sigma > 1.0f ? 1e-4f : 1.0f / 16.0f;
    c.seq_lens = {700, 33};
    c.seed = 70 + static_cast<std::uint64_t>(sigma > 1.0f);
    UQ_DECODE_RUN(c);
  }
}

// Scores that rise by several binades from one 64-token tile to the next (K x 2, x 4, x 8 in
// every 256 tokens, then back): a running maximum that moves far within a partition (a kernel
// that keeps a stale maximum for a while must notice and rescale), and tiles far below it.
TEST(UQ_DECODE_SUITE(Decode), ScoresRisingTileAfterTileAndFallingBack) {
  for (int qg : {6, 16}) {
    for (int partitions : {0, 1}) {
      DecodeCase c;
      c.qg = qg;
      c.k_step_log2 = 1;
      c.scale = 0.25f;
      c.seq_lens = {1000, 300, 64};
      c.partitions = partitions;
      c.seed = 80 + qg + partitions;
      UQ_DECODE_RUN(c);
    }
  }
}

}  // namespace

#undef UQ_DECODE_RUN
#undef UQ_DECODE_INSTANTIATE
#undef UQ_DECODE_SUITE
#undef UQ_DECODE_CAT
#undef UQ_DECODE_CAT_
