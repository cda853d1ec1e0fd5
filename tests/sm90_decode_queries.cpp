// The Hopper (sm_90) multi-token decode (spec ultraquant.md §5.9; arch/sm90/decode_queries.cu),
// linked into test_sm90_decode: Backend::Native throughout, so on a build or device without the
// sm90 path these tests FAIL (they never skip). Every query length the kernel takes at every
// query group size (QL 1..5 at QG 6, 1..4 at QG 8, 1..2 at QG 16), ragged query_start_loc with
// n_b = 0 and n_b above seq_len (rows that see nothing), block sizes 16 and 256, P = 1 and split
// K, every copy kind (one KV head, several KV heads and padded slots, slots not 16-byte aligned),
// enough query rows for every reducer shape, against the float64 reference with the sm90
// tolerance (support/sm90_decode_path.hpp, per row over the tokens it sees); and the bits of the
// sm90 one-token decode, where each row's arithmetic is that of a one-token decode of the tokens
// it sees: every n_b = 1, and each row as the one-token decode of its prefix. (Bad
// query_start_loc, non-finite rows, the uniform form, plan reuse and the path taken beyond 32
// query rows: test_decode_queries.cpp, whose Auto runs take this kernel on this device.)
#include "support/decode_queries_case.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#if defined(UQ_ENABLE_SM90)

namespace {

using namespace uqtest;

uq::DecodeConfig sm90_config(const QueriesCase& c) {
  uq::DecodeConfig cfg = queries_config(c);
  cfg.backend = uq::Backend::Native;
  return cfg;
}

// The case through a Native plan sized for max_query_len (0: the case's largest n_b), which must
// run on the sm90 path, against the reference. Returns what it wrote.
QueriesOutput check_sm90(const QueriesCase& c, int max_query_len = 0) {
  const QueriesData qd = build_queries_data(c);
  const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
  const uq::DecodeShape shape = queries_shape(c, qd, max_query_len);
  const QueriesOutput got = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
    uq::DecodePlan<Exec> plan(Exec(), shape, sm90_config(c));
    plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse);
    EXPECT_TRUE(plan.status().ok()) << plan.status().describe();
    EXPECT_EQ(plan.path(), uq::Path::Sm90) << plan.path_reason();
  });
  expect_queries_match(c.name() + " (sm90)", qd, reference_queries(c, qd, shape.max_query_len), got,
                       queries_tolerance(c, qd, uq::Path::Sm90));
  return got;
}

// Lengths 0, 1, 15, 300, 1000, 257 and 5 with n_b QL (> L), QL (> L for QL > 1), 0, QL, QL - 1
// (at least 1), QL and QL (= L at QL 5): every row of a short sequence sees a different prefix,
// the rows of a long one share all but their last tiles.
QueriesCase ragged(int qg, int ql, int block_size, std::uint64_t seed) {
  QueriesCase c;
  c.base.qg = qg;
  c.base.block_size = block_size;
  c.base.seq_lens = {0, 1, 15, 300, 1000, 257, 5};
  c.base.max_blocks_per_seq = (1000 + block_size - 1) / block_size + 1;
  c.base.seed = seed;
  c.query_lens = {ql, ql, 0, ql, ql > 1 ? ql - 1 : 1, ql, ql};
  return c;
}

class Sm90DecodeQueriesMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

// Every (QG, QL) the kernel takes (N = 16, 24 and 32), block sizes 16 and 256.
TEST_P(Sm90DecodeQueriesMatrix, RaggedQueryTokensMatchReference) {
  const int qg = std::get<0>(GetParam()), bs = std::get<1>(GetParam());
  for (int ql = 1; ql * qg <= 32; ++ql) check_sm90(ragged(qg, ql, bs, 500 + 10 * qg + ql + bs));
}

INSTANTIATE_TEST_SUITE_P(QgBlock, Sm90DecodeQueriesMatrix,
                         ::testing::Combine(::testing::Values(6, 8, 16), ::testing::Values(16, 256)));

// P = 1 (the partition kernel writes out and lse) and odd partition counts, raw and pre-rotated q,
// a plan whose max_query_len is above every n_b (N of the plan, not of the batch).
TEST(Sm90DecodeQueries, PartitionCountsRotationAndALargerPlan) {
  for (int partitions : {1, 3, 16}) {
    QueriesCase c = ragged(8, 2, 64, 600 + partitions);
    c.base.partitions = partitions;
    c.base.q_rotated = partitions == 3;
    check_sm90(c, partitions == 16 ? 4 : 0);
  }
  QueriesCase c16 = ragged(16, 2, 32, 620);
  c16.base.partitions = 1;
  check_sm90(c16);
}

// The three copy kinds of the partition kernel (decode_args.hpp, decode_copy_kind): one KV head
// with dense 272-byte slots (one copy per block run), several KV heads with 288-byte slots
// (tensor-map copies), 276-byte slots (4-byte aligned only: the synchronous copies).
TEST(Sm90DecodeQueries, EveryCopyKind) {
  struct Layout {
    int kv_heads, slot_bytes;
  };
  for (const Layout& l : {Layout{1, 272}, Layout{3, 288}, Layout{2, 276}}) {
    QueriesCase c;
    c.base.qg = 6;
    c.base.num_kv_heads = l.kv_heads;
    c.base.block_size = 32;
    c.base.slot_bytes = l.slot_bytes;
    c.base.seq_lens = {255, 256, 257, 513, 3};
    c.query_lens = {3, 2, 4, 1, 5};
    c.base.seed = 41 + l.slot_bytes;
    check_sm90(c);
  }
}

// Enough query-token rows for each reducer shape (reduce_kernel.cuh: chunks below 256 rows, rows
// from 256, warp rows from 2048): 5, 48 and 72 sequences of 4 query tokens at QG 8.
TEST(Sm90DecodeQueries, EveryReducerShape) {
  for (int seqs : {5, 48, 72}) {
    QueriesCase c;
    c.base.qg = 8;
    c.base.block_size = 64;
    c.base.seq_lens.clear();  // (DecodeCase starts with one sequence of 100 tokens)
    for (int b = 0; b < seqs; ++b) c.base.seq_lens.push_back(1 + (b * 97) % 700);
    c.base.max_blocks_per_seq = 12;
    c.query_lens.assign(static_cast<std::size_t>(seqs), 4);
    c.base.seed = 700 + seqs;
    check_sm90(c);
  }
}

// Every n_b = 1 through query_start_loc, on a plan made for up to 4 (N = 24 at QG 6), gives the
// bits of the sm90 one-token decode: a query row's arithmetic does not depend on the other rows
// of the wgmma's N.
TEST(Sm90DecodeQueries, OneQueryTokenPerSequenceIsBitIdenticalToTheOneTokenDecode) {
  expect_one_token_per_sequence_is_the_one_token_decode(uq::Backend::Native, uq::Path::Sm90);
}

// Each query token gives the bits of an sm90 one-token decode of its sequence with seq_len = the
// tokens it sees (the tiles past a row's tokens leave its state unchanged: alpha = 1, p = 0), at
// P = 4 and P = 1, QG 6 (5 tokens, N = 32), QG 8 (3 tokens, N = 24) and QG 16 (2 tokens, N = 32).
TEST(Sm90DecodeQueries, EachRowIsTheOneTokenDecodeOfItsPrefix) {
  struct Shape {
    int qg;
    std::vector<int> query_lens;
  };
  for (const Shape& sh : {Shape{6, {5, 4, 3}}, Shape{8, {3, 3, 2}}, Shape{16, {2, 1, 2}}})
    for (int partitions : {4, 1}) {
      QueriesCase c;
      c.base.qg = sh.qg;
      c.base.block_size = 16;
      c.base.seq_lens = {600, 2, 40};
      c.base.partitions = partitions;
      c.query_lens = sh.query_lens;
      c.base.seed = 80 + sh.qg + partitions;
      const QueriesData qd = build_queries_data(c);
      const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
      const uq::DecodeConfig cfg = sm90_config(c);
      const QueriesOutput several = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
        uq::decode(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse, cfg);
      });
      const DeviceQueriesInputs each = one_sequence_per_query_token(c, qd, in);
      const QueriesOutput one = run_queries(qd, each, [&](const auto& i, const auto& out, const auto& lse) {
        uq::decode(i.q, i.one.cache, i.one.tables, i.one.lens, out, lse, cfg);
      });
      expect_bit_identical(several, one, "QG " + std::to_string(sh.qg) + " P " + std::to_string(partitions));
    }
}

}  // namespace

#endif  // UQ_ENABLE_SM90
