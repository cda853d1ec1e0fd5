// Every host-checkable error of write_kv, rotate_query, decode and DecodePlan: a
// uq::Error thrown before any work, naming function, argument, expected and actual.
#include "support/test_util.hpp"
#include "uq/uq.hpp"

#include <gtest/gtest.h>

namespace {

using namespace uqtest;
using Q = DeviceView<uq::bf16***>;
using Cache = DeviceView<std::uint8_t****>;
using Tables = DeviceView<std::int32_t**>;
using Lens = DeviceView<std::int32_t*>;

struct Args {
  Q q{"q", 2, 6, 256};
  Cache cache{"cache", 4, 16, 1, 272};
  Tables tables{"tables", 2, 3};
  Lens lens{"lens", 2};
  Q out{"out", 2, 6, 256};
};

TEST(Errors, DecodeShapes) {
  Args a;
  uq::decode(a.q, a.cache, a.tables, a.lens, a.out);  // the valid call succeeds

  expect_error([&] { uq::decode(Q("q", 2, 6, 128), a.cache, a.tables, a.lens, a.out); },
               {"uq::decode", "argument 'q'", "extent(2) == 256", "got 128"});
  expect_error([&] { uq::decode(Q("q", 2, 4, 256), a.cache, a.tables, a.lens, Q("o", 2, 4, 256)); },
               {"uq::decode", "argument 'q'", "(the query group size) in {6, 8, 16}", "got 4"});
  expect_error([&] { uq::decode(Q("q", 2, 7, 256), Cache("c", 4, 16, 2, 272), a.tables, a.lens, Q("o", 2, 7, 256)); },
               {"argument 'q'", "a multiple of num_kv_heads = 2", "got 7"});
  uq::DecodeConfig qg8;
  qg8.qg = 8;
  expect_error([&] { uq::decode(a.q, a.cache, a.tables, a.lens, a.out, qg8); },
               {"argument 'q'", "num_q_heads = num_kv_heads * qg", "got 6"});
  expect_error([&] { uq::decode(a.q, Cache("c", 4, 48, 1, 272), a.tables, a.lens, a.out); },
               {"uq::decode", "argument 'kv_cache'", "(block_size) in {16, 32, 64, 128, 256}", "got 48"});
  expect_error([&] { uq::decode(a.q, Cache("c", 4, 16, 1, 268), a.tables, a.lens, a.out); },
               {"argument 'kv_cache'", "slot_bytes) >= 272", "got 268"});
  expect_error([&] { uq::decode(a.q, Cache("c", 4, 16, 1, 274), a.tables, a.lens, a.out); },
               {"argument 'kv_cache'", "multiple of 4", "got 274"});
  expect_error([&] { uq::decode(a.q, a.cache, Tables("t", 3, 3), a.lens, a.out); },
               {"argument 'block_tables'", "extent(0) == 2", "got 3"});
  expect_error([&] { uq::decode(a.q, a.cache, a.tables, Lens("l", 1), a.out); },
               {"argument 'seq_lens'", "extent(0) == 2", "got 1"});
  expect_error([&] { uq::decode(a.q, a.cache, a.tables, a.lens, Q("o", 2, 6, 255)); },
               {"argument 'out'", "extent(2) == 256", "got 255"});
  // A cache that is not dense in its last three dimensions.
  Kokkos::View<std::uint8_t****, Kokkos::LayoutLeft, Mem> left("left", 4, 16, 1, 272);
  expect_error([&] { uq::decode(a.q, left, a.tables, a.lens, a.out); },
               {"argument 'kv_cache'", "stride(3) == 1"});
}

// Extents beyond what 32-bit kernel arguments can hold are host errors, never narrowed: the
// views are unmanaged over a small buffer (the check comes before any access).
TEST(Errors, DecodeExtentsBeyond32Bits) {
  Args a;
  const std::size_t big = std::size_t{1} << 31;
  Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> wide(a.tables.data(), 2, big);
  expect_error([&] { uq::decode(a.q, a.cache, wide, a.lens, a.out); },
               {"uq::decode", "argument 'block_tables'", "extent(1) (max_blocks_per_seq) <= 2^31 - 1", "2147483648"});
  Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> many_heads(a.cache.data(), 1,
                                                                                                     16, big, 272);
  expect_error([&] { uq::decode(a.q, many_heads, a.tables, a.lens, a.out); },
               {"uq::decode", "argument 'kv_cache'", "extent(2) (num_kv_heads) <= 2^31 - 1", "2147483648"});
  // The reducer's grid (max_seqs, or the query tokens, * num_kv_heads * qg * 4) is checked by the plan.
  uq::DecodeShape shape{1 << 20, 64, 16, 64, 4};
  uq::DecodeConfig one;
  one.partitions = 1;
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), shape, one); },
               {"uq::decode", "argument 'shape'", "max(max_seqs, max query tokens) * num_kv_heads * qg * 4 <= 2^31 - 1",
                "4294967296"});
  // The same grid over query tokens (spec §5.9): 2^18 sequences of 4 query tokens each.
  uq::DecodeShape mtp{1 << 18, 64, 16, 64, 4};
  mtp.max_query_len = 4;
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), mtp, one); },
               {"uq::decode", "argument 'shape'", "max query tokens", "4294967296"});
  mtp.max_query_len = 17;
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), mtp, one); },
               {"uq::decode", "argument 'shape.max_query_len'", "1..16", "got 17"});
}

TEST(Errors, DecodeConfigAndAliasing) {
  Args a;
  uq::DecodeConfig cfg;
  cfg.partitions = 5000;
  expect_error([&] { uq::decode(a.q, a.cache, a.tables, a.lens, a.out, cfg); },
               {"config.partitions", "1..4096", "got 5000"});
  cfg = {};
  cfg.softmax_scale = NAN;
  expect_error([&] { uq::decode(a.q, a.cache, a.tables, a.lens, a.out, cfg); }, {"config.softmax_scale", "finite"});
  cfg = {};
  cfg.backend = uq::Backend::Native;
  // Native is an error wherever this build has no tuned decode kernel for the device (every
  // host build); on an H200 it runs them (tests/test_sm90_decode.cpp).
  if (uq::impl::DecodeDispatch<Exec>::tuned_path(uq::impl::device_info(Exec())) == uq::Path::Generic)
    expect_error([&] { uq::decode(a.q, a.cache, a.tables, a.lens, a.out, cfg); },
                 {"uq::decode", "config.backend", "Backend::Native on"});
  else
    EXPECT_NO_THROW(uq::decode(a.q, a.cache, a.tables, a.lens, a.out, cfg));
  // out aliasing q
  expect_error([&] { uq::decode(a.q, a.cache, a.tables, a.lens, a.q); },
               {"argument 'out'", "memory disjoint from 'q'", "overlapping memory"});
}

TEST(Errors, DecodePlanRunMismatch) {
  Args a;
  uq::DecodeConfig cfg;
  cfg.check = false;
  uq::DecodePlan<Exec> plan(Exec(), uq::DecodeShape{1, 1, 6, 16, 3}, cfg);
  expect_error([&] { plan.run(a.q, a.cache, a.tables, a.lens, a.out); },
               {"argument 'q'", "<= the plan's max_seqs = 1", "got 2"});
  uq::DecodePlan<Exec> plan2(Exec(), uq::DecodeShape{2, 1, 6, 32, 3}, cfg);
  expect_error([&] { plan2.run(a.q, a.cache, a.tables, a.lens, a.out); },
               {"argument 'kv_cache'", "(block_size) == 32", "got 16"});
  // A table narrower than the plan's is the engine's live one (tests/test_decode_splitk.cpp);
  // a wider one is an error.
  uq::DecodePlan<Exec> plan3(Exec(), uq::DecodeShape{2, 1, 6, 16, 2}, cfg);
  expect_error([&] { plan3.run(a.q, a.cache, a.tables, a.lens, a.out); },
               {"argument 'block_tables'", "extent(1) <= the plan's max_blocks_per_seq = 2", "got 3"});
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), uq::DecodeShape{2, 0, 6, 16, 5}, cfg); },
               {"shape.num_kv_heads", ">= 1", "got 0"});
  expect_error([&] { uq::DecodePlan<Exec>(Exec(), uq::DecodeShape{-1, 1, 6, 16, 5}, cfg); },
               {"shape.max_seqs", "got -1"});
  expect_error([&] { plan.run_reduce(2, a.out); }, {"argument 'num_seqs'", "0..1", "got 2"});
}

TEST(Errors, WriteKv) {
  Q k("k", 3, 1, 256), v("v", 3, 1, 256);
  DeviceView<std::int64_t*> slots("s", 3);
  Cache cache("c", 2, 16, 1, 272);
  uq::write_kv(k, v, slots, cache);
  expect_error([&] { uq::write_kv(Q("k", 3, 1, 64), v, slots, cache); }, {"uq::write_kv", "argument 'k'", "got 64"});
  expect_error([&] { uq::write_kv(k, Q("v", 2, 1, 256), slots, cache); },
               {"argument 'v'", "same shape as k", "got 2"});
  expect_error([&] { uq::write_kv(k, v, DeviceView<std::int64_t*>("s", 4), cache); },
               {"argument 'slot_mapping'", "extent(0) == 3", "got 4"});
  expect_error([&] { uq::write_kv(k, v, slots, Cache("c", 2, 16, 2, 272)); },
               {"argument 'k'", "num_kv_heads", "extent(1) == 2", "got 1"});
  expect_error([&] { uq::write_kv(k, v, slots, Cache("c", 2, 20, 1, 272)); }, {"block_size", "got 20"});
  uq::WriteKvConfig cfg;
  cfg.backend = uq::Backend::Native;
  // No tuned path has a KV cache writer: Native is an error on every device.
  expect_error([&] { uq::write_kv(k, v, slots, cache, cfg); },
               {"uq::write_kv", "config.backend", "implements KV cache writer", "Backend::Native on"});
  // the cache overlapping k's memory
  DeviceView<std::uint8_t*> raw("raw", 3 * 256 * 2 + 16 * 272);
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> k_in(reinterpret_cast<uq::bf16*>(raw.data()), 3, 1, 256);
  Kokkos::View<std::uint8_t****, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> c_in(raw.data() + 256, 1, 16, 1, 272);
  expect_error([&] { uq::write_kv(k_in, v, slots, c_in); },
               {"argument 'kv_cache'", "memory disjoint from 'k'", "overlapping"});
}

TEST(Errors, RotateQuery) {
  Q q("q", 2, 3, 256);
  DeviceView<float***> r("r", 2, 3, 256);
  uq::rotate_query(q, r);
  expect_error([&] { uq::rotate_query(q, DeviceView<float***>("r", 2, 2, 256)); },
               {"uq::rotate_query", "argument 'q_rot'", "extent(1) == 3", "got 2"});
  expect_error([&] { uq::rotate_query(Q("q", 2, 3, 100), DeviceView<float***>("r", 2, 3, 100)); },
               {"argument 'q'", "extent(2) == 256", "got 100"});
}

}  // namespace
