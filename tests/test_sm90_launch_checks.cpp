// The host side of the Hopper (sm90) decode launchers, in every build: the checks of a launch
// description (each failure a uq::Error naming the argument, the expectation and the value),
// the kernel arguments derived from it (softmax scale folded with the K operand's 2^-6 and
// log2(e), the copy-engine or synchronous loads from the cache's alignment, the 1-block stride
// rule, P = 1 writing out directly), the grid sizes and the shared-memory budgets; the
// multi-token launcher's query rows (at most 32 per KV head). Plain C++: arch/sm90/decode_launch_args.hpp needs no GPU, so CI runs
// this although it never runs the kernels.
#include "sm90/decode_grid.hpp"
#include "sm90/decode_launch_args.hpp"
#include "support/test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace {

using namespace uq::sm90;
using uqtest::expect_error;

// Addresses are only compared and aligned, never dereferenced.
const std::uint8_t* fake_address(std::uintptr_t a) { return reinterpret_cast<const std::uint8_t*>(a); }

// A valid description: 3 sequences, 2 KV heads, QG 8, block 64, 10 blocks per sequence.
DecodePartitionsLaunch valid_partitions() {
  DecodePartitionsLaunch l;
  l.cache = fake_address(0x10000);
  l.num_blocks = 40;
  l.block_size = 64;
  l.num_kv_heads = 2;
  l.slot_bytes = 272;
  l.block_stride = 64 * 2 * 272;
  l.q_stride_seq = 16 * 256;
  l.q_stride_head = 256;
  l.q_stride_dim = 1;
  l.table_stride_seq = 10;
  l.table_stride_block = 1;
  l.max_blocks_per_seq = 10;
  l.num_seqs = 3;
  l.qg = 8;
  l.partitions = 4;
  l.tgpp = 1;  // 4 x 1 x 256 = 1024 >= 10 x 64 = 640
  l.scale = 0.0625f;
  return l;
}

DecodeReduceLaunch valid_reduce() {
  DecodeReduceLaunch l;
  l.partial_out = reinterpret_cast<const std::uint16_t*>(fake_address(0x20000));
  l.out_stride_seq = 16 * 256;
  l.out_stride_head = 256;
  l.out_stride_dim = 1;
  l.num_seqs = 3;
  l.num_kv_heads = 2;
  l.qg = 8;
  l.partitions = 4;
  return l;
}

TEST(Sm90LaunchChecks, ValidDescriptionGivesTheKernelArguments) {
  DecodePartitionsLaunch l = valid_partitions();
  DecodeKernelArgs a = make_decode_kernel_args(l);
  // one rounding of scale x 2^6 x log2(e) (the K operand holds FP4 x 2^-6; the softmax is base 2)
  EXPECT_EQ(a.score_scale, static_cast<float>(0.0625 * 64.0 * 1.4426950408889634));
  EXPECT_EQ(a.pos_stride, 2 * 272);
  EXPECT_EQ(a.block_stride, 64 * 2 * 272);
  EXPECT_EQ(a.block_shift, 6);
  // 16-byte aligned base, slot and strides: copy-engine loads; q rows dense and aligned; two KV
  // heads, so a block's rows of one head are not contiguous (no kDenseRows): a tensor-map copy
  // per block run (kTensorRows); P = 4: partials
  EXPECT_EQ(a.flags, kBulkLoads | kWordLoads | kQVector | kTensorRows);
  EXPECT_EQ(decode_copy_kind(a.flags), kCopyBoxes);
  EXPECT_EQ(decode_partitions_blocks(l), 3 * 2 * 4);

  l.q_rotated = true;
  EXPECT_EQ(make_decode_kernel_args(l).flags, kQRotated | kBulkLoads | kWordLoads | kQVector | kTensorRows);
  l.q_rotated = false;
  l.num_kv_heads = 1;
  l.block_stride = 64 * 272;
  EXPECT_EQ(make_decode_kernel_args(l).flags, kBulkLoads | kWordLoads | kDenseRows | kQVector);
  EXPECT_EQ(decode_copy_kind(make_decode_kernel_args(l).flags), kCopyRuns);
  l = valid_partitions();
  l.q_stride_head = 260;  // q rows not 16-byte aligned: element loads
  EXPECT_EQ(make_decode_kernel_args(l).flags, kBulkLoads | kWordLoads | kTensorRows);
  // every block size (16 .. 256: a sub-block of min(block_size, 64) rows lands 128-byte aligned
  // in the ring) takes the tensor-map copies; without the copy engine, the synchronous ones
  for (int bs : {16, 32, 128, 256}) {
    l = valid_partitions();
    l.block_size = bs;
    l.block_stride = static_cast<std::int64_t>(bs) * 2 * 272;
    l.tgpp = 4;  // 4 x 4 x 256 >= 10 x 256
    EXPECT_EQ(make_decode_kernel_args(l).flags, kBulkLoads | kWordLoads | kQVector | kTensorRows) << bs;
  }

  // 4-byte aligned slots (padded to 276 bytes): synchronous 4-byte loads, not the copy engine
  l = valid_partitions();
  l.slot_bytes = 276;
  l.block_stride = 64 * 2 * 276;
  EXPECT_EQ(make_decode_kernel_args(l).flags, kWordLoads | kQVector);
  EXPECT_EQ(decode_copy_kind(make_decode_kernel_args(l).flags), kCopySync);
  // an offset view of the cache: byte copies
  l = valid_partitions();
  l.cache = fake_address(0x10001);
  EXPECT_EQ(make_decode_kernel_args(l).flags, kQVector);
  l.cache = fake_address(0x10004);
  EXPECT_EQ(make_decode_kernel_args(l).flags, kWordLoads | kQVector);

  // P = 1 with out: the partition kernel writes out (8-byte stores when rows are dense and
  // aligned) and lse; without out it writes partials for a reducer, as for P > 1
  l = valid_partitions();
  l.partitions = 1;
  l.tgpp = 4;
  EXPECT_EQ(make_decode_kernel_args(l).flags & kWriteOut, 0u);
  l.out = reinterpret_cast<std::uint16_t*>(static_cast<std::uintptr_t>(0x30000));
  l.out_stride_seq = 16 * 256;
  l.out_stride_head = 256;
  EXPECT_EQ(make_decode_kernel_args(l).flags & (kWriteOut | kOutVector), kWriteOut | kOutVector);
  l.out_stride_dim = 2;
  EXPECT_EQ(make_decode_kernel_args(l).flags & (kWriteOut | kOutVector), kWriteOut);
  EXPECT_EQ(make_decode_kernel_args(l).lse, nullptr);

  // With at most one block the stride is never used for addressing: the kernel gets the dense
  // block size (a stride of 0 from a 1-block view must not defeat the alignment choice).
  l = valid_partitions();
  l.num_blocks = 1;
  l.block_stride = 0;
  a = make_decode_kernel_args(l);
  EXPECT_EQ(a.block_stride, 64 * 2 * 272);
  EXPECT_EQ(a.flags, kBulkLoads | kWordLoads | kQVector | kTensorRows);

  // no sequences: nothing to launch, still valid
  l = valid_partitions();
  l.num_seqs = 0;
  EXPECT_NO_THROW(make_decode_kernel_args(l));
  EXPECT_EQ(decode_partitions_blocks(l), 0);
}

TEST(Sm90LaunchChecks, EveryBadPartitionArgumentIsNamed) {
  const char* fn = "uq::sm90::launch_decode_partitions";
  auto expect_bad = [&](auto change, std::initializer_list<std::string> fragments) {
    DecodePartitionsLaunch l = valid_partitions();
    change(l);
    expect_error([&] { make_decode_kernel_args(l); }, fragments);
  };
  expect_bad([](auto& l) { l.qg = 7; }, {fn, "'qg'", "6, 8 or 16", "got 7"});
  expect_bad([](auto& l) { l.block_size = 48; }, {fn, "'block_size'", "got 48"});
  expect_bad([](auto& l) { l.num_seqs = -1; }, {fn, "'num_seqs'", "got -1"});
  expect_bad([](auto& l) { l.num_kv_heads = 0; }, {fn, "'num_kv_heads'", "got 0"});
  expect_bad([](auto& l) { l.partitions = 0; }, {fn, "'partitions'", "got 0"});
  expect_bad([](auto& l) { l.tgpp = 0; }, {fn, "'tgpp'", "got 0"});
  expect_bad([](auto& l) { l.max_blocks_per_seq = -3; }, {fn, "'max_blocks_per_seq'", "got -3"});
  // 2 partitions x 1 tile-group x 256 tokens cannot cover 10 blocks of 64 tokens
  expect_bad([](auto& l) { l.partitions = 2; }, {fn, "'partitions * tgpp'", "640", "got 2 * 1"});
  expect_bad([](auto& l) { l.slot_bytes = 270; }, {fn, "'slot_bytes'", ">= 272", "got 270"});
  expect_bad([](auto& l) { l.slot_bytes = 274; }, {fn, "'slot_bytes'", "multiple of 4", "got 274"});
  expect_bad([](auto& l) { l.num_blocks = -1; }, {fn, "'num_blocks'", "got -1"});
  expect_bad([](auto& l) { l.block_stride = 64 * 2 * 272 - 16; }, {fn, "'block_stride'", "34816", "got 34800"});
  expect_bad([](auto& l) { l.q_stride_dim = 0; }, {fn, "'q strides'", "got 4096, 256, 0"});
  expect_bad([](auto& l) { l.q_stride_head = -256; }, {fn, "'q strides'", "-256"});
  expect_bad([](auto& l) { l.table_stride_block = 0; }, {fn, "'block_tables strides'", "got 10, 0"});
  expect_bad([](auto& l) { l.seq_lens_stride = -1; }, {fn, "'seq_lens stride'", "got -1"});
  // the 1-D grid: 2^31 - 1 blocks at most
  expect_bad(
      [](auto& l) {
        l.num_seqs = std::numeric_limits<int>::max() / 2;
        l.num_kv_heads = 2;
        l.partitions = 4;
      },
      {fn, "'num_seqs * num_kv_heads * partitions'", "<= 2^31 - 1"});
}

TEST(Sm90LaunchChecks, ReducerArgumentsAndBadOnes) {
  DecodeReduceLaunch l = valid_reduce();
  const ReduceKernelArgs a = make_reduce_kernel_args(l);
  EXPECT_EQ(a.partitions, 4);
  EXPECT_EQ(a.qg, 8);
  // one block per (sequence, query head, 32-dim chunk)
  EXPECT_EQ(decode_reduce_blocks(l), 3 * 2 * 8 * (256 / 32));

  const char* fn = "uq::sm90::launch_decode_reduce";
  auto expect_bad = [&](auto change, std::initializer_list<std::string> fragments) {
    DecodeReduceLaunch b = valid_reduce();
    change(b);
    expect_error([&] { make_reduce_kernel_args(b); }, fragments);
  };
  expect_bad([](auto& b) { b.qg = 4; }, {fn, "'qg'", "got 4"});
  expect_bad([](auto& b) { b.partitions = 4097; }, {fn, "'partitions'", "1..4096", "got 4097"});
  expect_bad([](auto& b) { b.partitions = 0; }, {fn, "'partitions'", "got 0"});
  expect_bad([](auto& b) { b.num_kv_heads = 0; }, {fn, "'num_kv_heads'", "got 0"});
  expect_bad([](auto& b) { b.out_stride_dim = 0; }, {fn, "'out strides'", "got 4096, 256, 0"});
  expect_bad([](auto& b) { b.partial_out = reinterpret_cast<const std::uint16_t*>(fake_address(0x20008)); },
             {fn, "'partial_out'", "16-byte aligned", "address % 16 = 8"});
}

// The partition kernel opts in to more than 48 KB of shared memory (its ring of whole tiles):
// the layout must fit one block (227 KB) and the CTAs per SM its launch bounds assume (228 KB
// per SM, 1 KB reserved per block), and every region (the ring's stages: tensor-map copies
// land there) keep its alignment. The reducer uses a fixed 1 KB whatever the partition count.
// Several query tokens per sequence (spec §5.9): the multi-token kernel takes max_query_len x qg
// <= 32 query rows per KV head (N = 16, 24 or 32) and refuses more, naming max_query_len and the
// limit (the dispatch then runs generic with that reason); the rest is the one-token kernel's
// arguments plus where the query tokens are. Its shared memory fits the CTAs per SM it assumes.
TEST(Sm90LaunchChecks, SeveralQueryTokensTakeUpTo32RowsAndNameWhatTheyRefuse) {
  const char* fn = "uq::sm90::launch_decode_queries";
  auto queries = [](int qg, int max_query_len) {
    DecodeQueriesLaunch l;
    static_cast<DecodePartitionsLaunch&>(l) = valid_partitions();
    l.qg = qg;
    l.q_stride_seq = 2 * 16 * 256;  // rows of 2 KV heads x up to 16 query heads
    l.max_query_len = max_query_len;
    l.query_len = max_query_len;
    l.num_query_tokens = l.num_seqs * max_query_len;
    return l;
  };
  struct Rows {
    int qg, max_query_len, n;
  };
  for (const Rows& r : {Rows{6, 1, 16}, Rows{6, 2, 16}, Rows{6, 3, 24}, Rows{6, 4, 24}, Rows{6, 5, 32}, Rows{8, 1, 16},
                        Rows{8, 2, 16}, Rows{8, 3, 24}, Rows{8, 4, 32}, Rows{16, 1, 16}, Rows{16, 2, 32}}) {
    const DecodeQueriesLaunch l = queries(r.qg, r.max_query_len);
    EXPECT_EQ(decode_queries_rows(l), r.n) << "qg " << r.qg << " QL " << r.max_query_len;
    const DecodeQueriesKernelArgs a = make_decode_queries_kernel_args(l);
    EXPECT_EQ(a.max_query_len, r.max_query_len);
    EXPECT_EQ(a.query_len, r.max_query_len);
    EXPECT_EQ(a.num_query_tokens, l.num_query_tokens);
    EXPECT_EQ(a.query_start_loc, nullptr);
    EXPECT_EQ(a.qg, r.qg);
  }
  for (const Rows& r : {Rows{6, 6, 0}, Rows{8, 5, 0}, Rows{16, 3, 0}})
    expect_error([&] { make_decode_queries_kernel_args(queries(r.qg, r.max_query_len)); },
                 {fn, "'max_query_len'", "max_query_len * qg <= 32",
                  "got " + std::to_string(r.max_query_len) + " at qg " + std::to_string(r.qg)});
  expect_error([&] { make_decode_queries_kernel_args(queries(8, 0)); }, {fn, "'max_query_len'", ">= 1", "got 0"});
  DecodeQueriesLaunch l = queries(8, 4);
  l.query_len = 5;
  expect_error([&] { make_decode_queries_kernel_args(l); }, {fn, "'query_len'", "1 .. max_query_len", "got 5"});
  l = queries(8, 4);
  l.num_query_tokens = 11;
  expect_error([&] { make_decode_queries_kernel_args(l); }, {fn, "'num_query_tokens'", ">= num_seqs * query_len", "got 11"});
  l = queries(8, 4);
  l.qg = 7;  // the one-token checks, under the multi-token launcher's name
  expect_error([&] { make_decode_queries_kernel_args(l); }, {fn, "'qg'", "got 7"});
  for (int n : {16, 24, 32}) {
    EXPECT_LE(decode_queries_ctas_per_sm(n) * (decode_smem_layout_n(n).total + 1024), 228 * 1024) << "N " << n;
    const DecodeSmem m = decode_smem_layout_n(n);
    for (int off : {m.ring, m.q, m.p, m.red, m.redl, m.meta, m.bars, m.qbad, m.sync}) EXPECT_EQ(off % 16, 0) << "N " << n;
    EXPECT_GE(m.sync - m.qbad, n);  // a qbad byte per row
  }
  EXPECT_EQ(decode_smem_layout_n(q_rows(16)).total, decode_smem_bytes(16));  // the one-token layouts unchanged
  EXPECT_EQ(decode_smem_layout_n(q_rows(6)).total, decode_smem_bytes(6));
}

TEST(Sm90LaunchChecks, SharedMemoryFitsTheOccupancyTheKernelsAssume) {
  EXPECT_EQ(kDecodeCtasPerSm, 3);
  for (int qg : {6, 8, 16}) {
    EXPECT_LE(decode_smem_bytes(qg), 227 * 1024) << "qg " << qg;
    EXPECT_LE(kDecodeCtasPerSm * (decode_smem_bytes(qg) + 1024), 228 * 1024) << "qg " << qg;
    const DecodeSmem m = decode_smem_layout(qg);
    EXPECT_EQ(m.ring % 128, 0) << "qg " << qg;
    EXPECT_EQ(kStageBytes % 128, 0);
    for (int off : {m.ring, m.q, m.p, m.red, m.redl, m.meta, m.bars}) EXPECT_EQ(off % 16, 0) << "qg " << qg;
  }
  for (int sub : {8, 16, 32, 64}) EXPECT_EQ(sub * kRowBytes % 128, 0) << sub;  // a box's first row in the ring
  EXPECT_LT(decode_smem_bytes(6), decode_smem_bytes(16));  // Q rows padded to 8 vs 16
}

// The CTAs per (sequence, KV head) of the persistent partition kernel: always 1..P and never
// more than the partitions that can hold tokens (a CTA without any would only write l and m),
// one wave of 132 x 3 CTAs at the headline (4 x 75000 tokens, P = 512, 293 partitions hold
// tokens: R = 99, so 95 CTAs of each sequence take 3 of them and 4 take 2), several at 64 x
// 131k (R = 37: 2368 CTAs of 6-7 partitions of 8 tiles).
TEST(Sm90LaunchChecks, CtasPerSequenceAndHeadStayWithinThePartitions) {
  EXPECT_EQ(decode_ctas_per_bh(4, 512, 1, 1172 * 64, 132, 3), 99);
  EXPECT_EQ(decode_ctas_per_bh(64, 256, 2, 2048 * 64, 132, 3), 37);
  EXPECT_EQ(decode_ctas_per_bh(1, 512, 1, 2048 * 64, 132, 3), 396);
  EXPECT_EQ(decode_ctas_per_bh(3, 1, 8, 10 * 64, 132, 3), 1);  // P = 1
  EXPECT_EQ(decode_ctas_per_bh(3, 4, 1, 0, 132, 3), 1);        // nothing to read
  // An engine's batch (256 sequences x 4 KV heads, a 128k-token table, P = 256, here at 4 CTAs
  // per SM): the wave model alone would give R = 1 (two waves at full length), which
  // serialises a short sequence's partitions in one CTA; at most kMaxPartitionsPerCta each.
  EXPECT_EQ(decode_ctas_per_bh(1024, 256, 2, 2048 * 64, 132, 4), 8);
  for (std::int64_t nbh : {1, 2, 7, 64, 500, 4096})
    for (int p : {1, 2, 16, 128, 512, 4096})
      for (std::int64_t tokens : {std::int64_t{1}, std::int64_t{300}, std::int64_t{5000}, std::int64_t{131072}, std::int64_t{1} << 21}) {
        const std::int64_t tg = (tokens + 255) / 256;
        const int tgpp = static_cast<int>(std::max<std::int64_t>(1, (tg + p - 1) / p));
        const int r = decode_ctas_per_bh(nbh, p, tgpp, tokens, 132, 3);
        EXPECT_GE(r, 1) << nbh << " " << p << " " << tokens;
        EXPECT_LE((std::min<std::int64_t>(p, tg) + r - 1) / r, kMaxPartitionsPerCta) << nbh << " " << p << " " << tokens;
        EXPECT_LE(r, std::max<std::int64_t>(1, std::min<std::int64_t>(p, tg))) << nbh << " " << p << " " << tokens;
      }
}

}  // namespace
