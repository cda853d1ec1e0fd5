// Decode with several query tokens per sequence (spec ultraquant.md §5.9), mostly on the generic
// path (the tests that run Auto take the device's multi-token kernel where it has one, and hold
// its rows to that path's tolerance; the sm90 kernel's own tests: sm90_decode_queries.cpp):
// ragged n_b (0, n_b above seq_len: rows that see nothing), QL up to 8, every QG, block sizes 16
// and 256, strided q, P = 1 and split-K, lse, the uniform form, a caller's workspace and a
// narrower block table, against the float64 reference (decode_queries_case.hpp: the one-token
// tolerances per row); bit identity with the one-token decode (every n_b = 1, and each row as
// the one-token decode of its prefix); bad query_start_loc on the host (check = true) and on the
// device (masked and counted); one plan reused with changed lengths and query tokens, as a
// captured graph replays it; the path taken and why.
#include "support/decode_queries_case.hpp"

#include <gtest/gtest.h>


namespace {

using namespace uqtest;

// A ragged batch: lengths 0, 1, 15, 17, 300, 1000, 5 and 257 with n_b 2 (> L), 3 (> L), 0, 8, 1,
// 4, 7 (> L) and 2; the table one block wider than the longest sequence.
QueriesCase ragged_case(int qg, int block_size, std::uint64_t seed) {
  QueriesCase c;
  c.base.qg = qg;
  c.base.block_size = block_size;
  c.base.seq_lens = {0, 1, 15, 17, 300, 1000, 5, 257};
  c.base.max_blocks_per_seq = (1000 + block_size - 1) / block_size + 1;
  c.base.seed = seed;
  c.query_lens = {2, 3, 0, 8, 1, 4, 7, 2};
  return c;
}

// The case through a generic plan sized for it (query_start_loc form), checked against the reference.
void check_generic(const QueriesCase& c, int max_query_len = 0) {
  const QueriesData qd = build_queries_data(c);
  const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
  uq::DecodeConfig cfg = queries_config(c);
  cfg.backend = uq::Backend::Generic;
  const uq::DecodeShape shape = queries_shape(c, qd, max_query_len);
  const QueriesOutput got = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
    uq::DecodePlan<Exec> plan(Exec(), shape, cfg);
    plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse);
    EXPECT_TRUE(plan.status().ok()) << plan.status().describe();
    EXPECT_EQ(plan.path(), uq::Path::Generic);
  });
  expect_queries_match(c.name(), qd, reference_queries(c, qd, shape.max_query_len), got);
}

class DecodeQueriesMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(DecodeQueriesMatrix, RaggedQueryTokensMatchReference) {
  const int qg = std::get<0>(GetParam()), bs = std::get<1>(GetParam());
  check_generic(ragged_case(qg, bs, 300 + qg + bs));
}

INSTANTIATE_TEST_SUITE_P(QgBlock, DecodeQueriesMatrix,
                         ::testing::Combine(::testing::Values(6, 8, 16), ::testing::Values(16, 256)));

// One partition (the partition kernel writes out and lse, one launch) and odd partition counts,
// raw and pre-rotated q, and a plan whose max_query_len is above every n_b.
TEST(DecodeQueries, PartitionCountsRotationAndALargerPlan) {
  for (int partitions : {1, 3, 16}) {
    QueriesCase c = ragged_case(8, 64, 400 + partitions);
    c.base.partitions = partitions;
    c.base.q_rotated = partitions == 3;
    check_generic(c, partitions == 16 ? 16 : 0);
  }
}

// Several KV heads, padded slots and a dense-looking layout of lengths that straddle tile-groups.
TEST(DecodeQueries, SeveralKvHeadsAndPaddedSlots) {
  QueriesCase c;
  c.base.qg = 6;
  c.base.num_kv_heads = 3;
  c.base.block_size = 32;
  c.base.slot_bytes = 288;
  c.base.seq_lens = {255, 256, 257, 513};
  c.query_lens = {3, 2, 4, 1};
  c.base.seed = 41;
  check_generic(c);
}

// The uniform form (config.query_len, no query_start_loc) at QL 2, 4 and 8 gives the bits of the
// same query tokens through query_start_loc, and matches the reference.
TEST(DecodeQueries, UniformFormMatchesQueryStartLoc) {
  for (int ql : {2, 4, 8}) {
    QueriesCase c;
    c.base.qg = ql == 8 ? 16 : 6;
    c.base.block_size = 16;
    c.base.seq_lens = {700, 3, 90};
    c.query_lens.assign(3, ql);
    c.base.seed = 50 + ql;
    const QueriesData qd = build_queries_data(c);
    const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
    uq::DecodeConfig cfg = queries_config(c);
    const QueriesOutput with_starts = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
      uq::decode(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse, cfg);
    });
    cfg.query_len = ql;
    uq::Path ran = uq::Path::Generic;
    const QueriesOutput uniform = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
      uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(i.q, i.one.cache, i.one.tables, cfg), cfg);
      EXPECT_EQ(plan.shape().max_query_len, ql);
      plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, out, lse);
      ran = plan.path();
      EXPECT_EQ(ran, expected_queries_path(plan.device(), c.base.qg, ql)) << plan.path_reason();
    });
    expect_bit_identical(uniform, with_starts, "QL " + std::to_string(ql));
    expect_queries_match(c.name(), qd, reference_queries(c, qd, ql), uniform, queries_tolerance(c, qd, ran));
  }
}

// Every n_b = 1 through query_start_loc gives the one-token decode's bits (spec §5.9).
TEST(DecodeQueries, OneQueryTokenPerSequenceIsBitIdenticalToTheOneTokenDecode) {
  expect_one_token_per_sequence_is_the_one_token_decode(uq::Backend::Generic, uq::Path::Generic);
}

// Each query token gives the bits of a one-token decode of its sequence with seq_len = the tokens
// it sees (what an engine gets today by decoding each token separately with synthetic lengths),
// at P = 4 and P = 1, QG 6 and 16.
TEST(DecodeQueries, EachRowIsTheOneTokenDecodeOfItsPrefix) {
  for (int qg : {6, 16})
    for (int partitions : {4, 1}) {
      QueriesCase c;
      c.base.qg = qg;
      c.base.block_size = 16;
      c.base.seq_lens = {600, 2, 40};
      c.base.partitions = partitions;
      c.query_lens = {5, 4, 3};
      c.base.seed = 70 + qg + partitions;
      const QueriesData qd = build_queries_data(c);
      const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
      uq::DecodeConfig cfg = queries_config(c);
      cfg.backend = uq::Backend::Generic;
      const QueriesOutput several = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
        uq::decode(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse, cfg);
      });
      const DeviceQueriesInputs each = one_sequence_per_query_token(c, qd, in);
      const QueriesOutput one = run_queries(qd, each, [&](const auto& i, const auto& out, const auto& lse) {
        uq::decode(i.q, i.one.cache, i.one.tables, i.one.lens, out, lse, cfg);
      });
      expect_bit_identical(several, one, "QG " + std::to_string(qg) + " P " + std::to_string(partitions));
    }
}

// check = true: a bad query_start_loc is a uq::Error before anything runs (out stays poisoned).
TEST(DecodeQueries, BadQueryStartLocThrowsOnTheHost) {
  QueriesCase c;
  c.base.seq_lens = {100, 50, 20};
  c.query_lens = {2, 3, 1};
  const QueriesData qd = build_queries_data(c);
  DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
  struct Bad {
    std::vector<std::int32_t> starts;
    std::vector<std::string> words;
  };
  const Bad bad[] = {
      {{1, 2, 5, 6}, {"query_start_loc[0] == 0", "query_start_loc[0] = 1"}},
      {{0, 3, 2, 6}, {"non-decreasing", "query_start_loc[2] = 2 < query_start_loc[1] = 3"}},
      {{0, 2, 5, 5}, {"query_start_loc[num_seqs] == 6", "query_start_loc[3] = 5"}},
      {{0, 1, 5, 6}, {"at most 3 rows per sequence", "sequence 1", "= 4"}},
  };
  for (const Bad& b : bad) {
    in.starts = to_device(b.starts, "query_start_loc", b.starts.size());
    DeviceView<uq::bf16***> out("out", qd.tokens, qd.d.hq, 256);
    Kokkos::deep_copy(out, uq::bf16{kPoisonBf16});
    uq::DecodePlan<Exec> plan(Exec(), queries_shape(c, qd), queries_config(c));
    expect_error([&] { plan.run(in.q, in.one.cache, in.one.tables, in.one.lens, in.starts, out); },
                 {"uq::decode", "query_start_loc", b.words.begin()[0], b.words.back()});
    for (const auto& x : to_host(out)) ASSERT_EQ(x.bits, kPoisonBf16);
  }
  // Wrong extents are host errors whatever check says.
  in.starts = to_device(std::vector<std::int32_t>{0, 2, 5}, "short", 3);
  DeviceView<uq::bf16***> out("out", qd.tokens, qd.d.hq, 256);
  uq::DecodePlan<Exec> plan(Exec(), queries_shape(c, qd), queries_config(c, false));
  expect_error([&] { plan.run(in.q, in.one.cache, in.one.tables, in.one.lens, in.starts, out); },
               {"uq::decode", "query_start_loc", "extent(0) == 4", "3"});
  uq::DecodeConfig uniform = queries_config(c, false);
  uniform.query_len = 4;
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), queries_shape(c, qd), uniform); },
               {"uq::decode", "config.query_len", "1..shape.max_query_len = 3", "got 4"});
}

// check = false: the device masks a malformed range (skipped: its rows keep their poison when
// no other range covers them) and counts it once; the other sequences' rows are right, nothing is
// read or written out of bounds (the ASan suite runs this too).
TEST(DecodeQueries, BadQueryStartLocIsMaskedAndCountedOnTheDevice) {
  QueriesCase c;
  c.base.qg = 8;
  c.base.seq_lens = {100, 50, 20, 70};
  c.query_lens = {2, 2, 2, 2};
  const QueriesData qd = build_queries_data(c);
  DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
  struct Bad {
    std::vector<std::int32_t> starts;
    std::uint64_t count;
  };
  // The plan takes n_b <= 3; T = 8.
  const Bad bad[] = {
      {{0, 2, 4, 6, 7}, 1},                // last != T: sequence 3
      {{0, 3, 2, 5, 8}, 1},                // decreasing: sequence 1 (row 2 covered twice)
      {{0, 2, 4, 100, 8}, 2},              // past T: sequences 2 and 3
      {{0, 2, 2, 8, 8}, 1},                // n_b = 6 above max_query_len: sequence 2
      {{-5, 2, 4, 6, 8}, 1},               // negative first: sequence 0
      {{0, 2, -2147483647 - 1, 6, 8}, 2},  // sequences 1 and 2
  };
  for (const Bad& b : bad) {
    QueriesData bd = qd;
    bd.starts = b.starts;
    in.starts = to_device(b.starts, "query_start_loc", b.starts.size());
    uq::DecodeShape shape = queries_shape(c, qd, 3);
    for (int partitions : {0, 1}) {
      QueriesCase pc = c;
      pc.base.partitions = partitions;
      uq::Status st;
      uq::Path ran = uq::Path::Generic;
      const QueriesOutput got = run_queries(bd, in, [&](const auto& i, const auto& out, const auto& lse) {
        uq::DecodePlan<Exec> plan(Exec(), shape, queries_config(pc, false));
        plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse);
        st = plan.status();
        ran = plan.path();
        EXPECT_EQ(ran, expected_queries_path(plan.device(), c.base.qg, 3)) << plan.path_reason();
      });
      EXPECT_EQ(st[uq::Counter::bad_start_locs], b.count) << b.starts[1] << " P " << partitions;
      const uqref::DecodeResult ref = reference_queries(c, bd, 3);
      EXPECT_EQ(ref.bad_start_locs, b.count);
      expect_queries_match(c.name() + " (bad query_start_loc)", bd, ref, got, queries_tolerance(c, bd, ran));
      // With P = 1 no reducer writes the rows of skipped sequences: they keep the poison.
      if (partitions == 1)
        for (int i = 0; i < bd.tokens; ++i) {
          bool covered = false;
          for (int s = 0; s < 4; ++s)
            covered = covered || (!uqref::malformed_start_loc(b.starts.data(), 4, s, bd.tokens, 3) &&
                                  b.starts[s] <= i && i < b.starts[s + 1]);
          if (!covered) EXPECT_EQ(got.out[static_cast<std::size_t>(i) * qd.d.hq * 256], kPoisonBf16) << i;
        }
    }
  }
}

// One plan, sized for the worst case, reused as a captured graph would be: changed lengths,
// n_b and T (fewer sequences and query tokens than it was made for), a narrower block table,
// a caller-owned workspace, one-token runs in between; every run against the reference.
TEST(DecodeQueries, PlanReusedWithChangedLengthsAndQueryTokens) {
  QueriesCase big;
  big.base.qg = 6;
  big.base.block_size = 64;
  big.base.seq_lens = {1500, 40, 700, 3};
  big.query_lens = {4, 4, 4, 4};
  big.base.max_blocks_per_seq = 30;
  const QueriesData bd = build_queries_data(big);
  uq::DecodeShape shape = queries_shape(big, bd, 6);
  shape.max_seqs = 6;
  shape.max_query_tokens = 20;
  uq::DecodeConfig cfg = queries_config(big, false);
  const std::size_t bytes = uq::DecodePlan<Exec>::workspace_bytes(shape, cfg);
  uq::DecodeShape one_token = shape;
  one_token.max_query_len = 1;
  one_token.max_query_tokens = 0;
  EXPECT_GT(bytes, uq::DecodePlan<Exec>::workspace_bytes(one_token, cfg));  // 20 rows of partials, not 6
  DeviceView<std::uint8_t*> workspace("workspace", bytes);
  uq::DecodePlan<Exec> plan(Exec(), shape, cfg, workspace);

  const std::vector<std::vector<int>> lens = {{1500, 40, 700, 3}, {17, 1600, 0}, {900, 900, 64, 5}};
  const std::vector<std::vector<int>> nbs = {{4, 4, 4, 4}, {6, 1, 3}, {0, 2, 5, 6}};
  for (std::size_t run = 0; run < lens.size(); ++run) {
    QueriesCase c = big;
    c.base.seq_lens = lens[run];
    c.query_lens = nbs[run];
    c.base.seed = 90 + run;
    c.base.max_blocks_per_seq = (1600 + 63) / 64;  // narrower than the plan's table for run 0
    const QueriesData qd = build_queries_data(c);
    const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
    const QueriesOutput got = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
      plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse);
    });
    EXPECT_TRUE(plan.status().ok()) << plan.status().describe();
    EXPECT_EQ(plan.path(), expected_queries_path(plan.device(), c.base.qg, 6)) << plan.path_reason();
    expect_queries_match(c.name() + " (run " + std::to_string(run) + ")", qd, reference_queries(c, qd, 6), got,
                         queries_tolerance(c, qd, plan.path()));
    // A one-token run of the same plan in between: the one-token decode's path and bits.
    DeviceView<uq::bf16***> out1("out1", qd.d.num_seqs, qd.d.hq, 256);
    plan.run(in.one.q, in.one.cache, in.one.tables, in.one.lens, out1);
    EXPECT_EQ(plan.path(), uq::impl::DecodeDispatch<Exec>::tuned_path(plan.device()));
  }
}

// Non-finite query rows among several query tokens: NaN rows and lse, counted once per (query
// token, query head), including a token that sees nothing and one in a P = 1 run.
TEST(DecodeQueries, NonFiniteQueryRowsAreNanAndCountedOnce) {
  for (int partitions : {0, 1}) {
    QueriesCase c;
    c.base.qg = 6;
    c.base.num_kv_heads = 2;
    c.base.seq_lens = {300, 1, 40};
    c.base.partitions = partitions;
    c.query_lens = {3, 2, 2};  // token 3 (sequence 1's first) sees nothing
    c.q_overrides = {{0, 1, 5, 0x7FC0}, {2, 7, 255, 0x7F80}, {3, 0, 0, 0xFF80}, {3, 0, 9, 0x7FC0}, {6, 11, 3, 0x7F81}};
    const QueriesData qd = build_queries_data(c);
    const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
    uq::Status st;
    uq::Path ran = uq::Path::Generic;
    const QueriesOutput got = run_queries(qd, in, [&](const auto& i, const auto& out, const auto& lse) {
      uq::DecodePlan<Exec> plan(Exec(), queries_shape(c, qd), queries_config(c, false));
      plan.run(i.q, i.one.cache, i.one.tables, i.one.lens, i.starts, out, lse);
      st = plan.status();
      ran = plan.path();
      EXPECT_EQ(ran, expected_queries_path(plan.device(), c.base.qg, 3)) << plan.path_reason();
    });
    EXPECT_EQ(st[uq::Counter::nonfinite_inputs], 4u) << "P " << partitions;
    expect_queries_match(c.name(), qd, reference_queries(c, qd, 3), got, queries_tolerance(c, qd, ran));
  }
}

// Multi-token runs take the device's multi-token kernel where a path has one (gfx950, for this
// plan's 2 x 6 query rows, up to 32 a sequence: arch/gfx950/tuned_path.hpp; tested in tests/emu; sm90 where the
// plan's max_query_len x qg <= 32: arch/sm90/tuned_path.hpp, beyond that the generic kernels
// with the sm90 launcher's reason, Native refused with it), else the generic kernels, saying why
// where the device has a tuned decode; Native refuses them there.
TEST(DecodeQueries, PathAndReason) {
  QueriesCase c;
  c.base.seq_lens = {30, 20};
  c.query_lens = {2, 2};
  const QueriesData qd = build_queries_data(c);
  const DeviceQueriesInputs in = queries_inputs_on_device(c, qd);
  uq::DecodePlan<Exec> plan(Exec(), queries_shape(c, qd), queries_config(c));
  DeviceView<uq::bf16***> out("out", qd.tokens, qd.d.hq, 256);
  plan.run(in.q, in.one.cache, in.one.tables, in.one.lens, in.starts, out);
  const uq::Path queries_path = uq::impl::DecodeDispatch<Exec>::QueriesTwoKernels::tuned_path(plan.device());
  EXPECT_EQ(plan.path(), queries_path);
  if (queries_path == uq::Path::Sm90) {
    // 6 query tokens at qg 6 (36 rows): Auto runs generic and says why, Native throws that.
    QueriesCase wide = c;
    wide.query_lens = {6, 6};
    const QueriesData wd = build_queries_data(wide);
    const DeviceQueriesInputs win = queries_inputs_on_device(wide, wd);
    DeviceView<uq::bf16***> wout("wout", wd.tokens, wd.d.hq, 256);
    uq::DecodePlan<Exec> auto_plan(Exec(), queries_shape(wide, wd), queries_config(wide));
    auto_plan.run(win.q, win.one.cache, win.one.tables, win.one.lens, win.starts, wout);
    EXPECT_EQ(auto_plan.path(), uq::Path::Generic);
    for (const char* word : {"uq::sm90::launch_decode_queries", "max_query_len * qg <= 32", "6 at qg 6"})
      EXPECT_NE(auto_plan.path_reason().find(word), std::string::npos) << auto_plan.path_reason();
    uq::DecodeConfig native = queries_config(wide);
    native.backend = uq::Backend::Native;
    uq::DecodePlan<Exec> native_plan(Exec(), queries_shape(wide, wd), native);
    expect_error([&] { native_plan.run(win.q, win.one.cache, win.one.tables, win.one.lens, win.starts, wout); },
                 {"uq::decode", "max_query_len * qg <= 32"});
    return;
  }
  if (queries_path != uq::Path::Generic) return;  // a device with a multi-token kernel: Native takes it
  EXPECT_NE(plan.path_reason().find("decode queries"), std::string::npos) << plan.path_reason();
  // Native: a plan made for several query tokens is refused when it is made (where the device has
  // a tuned one-token decode, for lack of a decode queries kernel; elsewhere already for that).
  uq::DecodeConfig native = queries_config(c);
  native.backend = uq::Backend::Native;
  const bool tuned = uq::impl::DecodeDispatch<Exec>::tuned_path(plan.device()) != uq::Path::Generic;
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), queries_shape(c, qd), native); },
               {"uq::decode", "config.backend", "Backend::Native", tuned ? "decode queries" : "decode partitions"});
}

}  // namespace
