// uq::write_kv bit-exact against the float64 reference writer, on random and
// adversarial rows: exact midpoints (ties go to the lower level), +-5 saturation,
// exponent boundaries, tiny (flushed) and huge groups, zeros, NaN/Inf, subnormal bf16;
// skipped and out-of-range slots, slot padding untouched, counters.
#include "support/test_util.hpp"
#include "uq/uq.hpp"
#include "uqref.hpp"
#include "writer_dispatch_count.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace uqtest;

std::uint16_t bf(float x) { return uq::codec::float_to_bf16(x).bits; }

struct WriterCase {
  int T = 0, Hk = 1, num_blocks = 4, block_size = 16, slot_bytes = 272;
  std::vector<std::uint16_t> k, v;  // [T][Hk][256]
  std::vector<std::int64_t> slots;
};

using HostExec = Kokkos::DefaultHostExecutionSpace;
template <class T>
using HostView = Kokkos::View<T, Kokkos::LayoutRight, Kokkos::HostSpace>;
using HostCounts = Kokkos::View<unsigned long long[uq::kNumCounters], Kokkos::HostSpace>;

// The GPU layout of the writer (16 lanes an item, 8 items a team, three phases) run
// on the host, each team's threads one after another phase by phase: the
// same item, phase and store code the device runs, checked here on every case. Returns
// the counters.
template <int Lanes, class K, class V, class S, class C>
uq::Status run_gpu_layout(const K& k, const V& v, const S& slots, const C& cache) {
  HostCounts counts("counts");
  const uq::impl::WriteKvGeneric<HostExec, K, V, S, C, HostCounts, Lanes> w(k, v, slots, cache, counts);
  std::vector<float> scratch(static_cast<std::size_t>(w.kScratchBytes) / sizeof(float));
  for (int t = 0; t < w.num_batches(); ++t) {
    // poison: every scratch value a phase reads must have been written by the phase before
    std::fill(scratch.begin(), scratch.end(), std::nanf(""));
    w.run_team_in_order(t, scratch.data());
  }
  uq::Status st;
  for (int i = 0; i < uq::kNumCounters; ++i) st.counts[i] = counts(i);
  return st;
}

void expect_same_bytes(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want, int slot_bytes,
                       const char* what) {
  ASSERT_EQ(got.size(), want.size());
  int shown = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && shown++ < 8)
      ADD_FAILURE() << what << ": byte " << i << " (slot " << i / slot_bytes << ", offset " << i % slot_bytes
                    << "): got " << int(got[i]) << ", reference " << int(want[i]);
}

// The GPU layout on host copies of a case (same views' layout as the device run).
template <int Lanes>
void expect_gpu_layout_matches(const WriterCase& c, const std::vector<std::uint8_t>& init,
                               const std::vector<std::uint8_t>& want, std::uint64_t bad_slots,
                               std::uint64_t nonfinite) {
  HostView<uq::bf16***> k("k", c.T, c.Hk, 256), v("v", c.T, c.Hk, 256);
  for (std::size_t i = 0; i < c.k.size(); ++i) k.data()[i].bits = c.k[i], v.data()[i].bits = c.v[i];
  HostView<std::int64_t*> s("s", c.T);
  for (int t = 0; t < c.T; ++t) s(t) = c.slots[t];
  HostView<std::uint8_t****> cache("cache", c.num_blocks, c.block_size, c.Hk, c.slot_bytes);
  std::copy(init.begin(), init.end(), cache.data());
  const uq::Status st = run_gpu_layout<Lanes>(k, v, s, cache);
  const std::string what = std::to_string(Lanes) + "-lane layout";
  EXPECT_EQ(st[uq::Counter::bad_slots], bad_slots) << what;
  EXPECT_EQ(st[uq::Counter::nonfinite_inputs], nonfinite) << what;
  expect_same_bytes(std::vector<std::uint8_t>(cache.data(), cache.data() + cache.size()), want, c.slot_bytes,
                    what.c_str());
}

// A cache of case c filled with seeded garbage, and the reference's bytes (and counts)
// after writing c into it.
struct ReferenceBytes {
  std::vector<std::uint8_t> init, want;
  uqref::WriteCounts counts;
};

ReferenceBytes reference_bytes(const WriterCase& c, unsigned seed) {
  ReferenceBytes r;
  r.init.resize(static_cast<std::size_t>(c.num_blocks) * c.block_size * c.Hk * c.slot_bytes);
  std::mt19937 rng(seed);
  for (auto& b : r.init) b = static_cast<std::uint8_t>(rng());
  r.want = r.init;
  r.counts = uqref::uq_write_kv(c.k.data(), c.v.data(), c.slots.data(), c.T, c.Hk, r.want.data(), c.num_blocks,
                                c.block_size, c.slot_bytes);
  return r;
}

std::vector<uq::bf16> bf16_values(const std::vector<std::uint16_t>& bits) {
  std::vector<uq::bf16> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) out[i].bits = bits[i];
  return out;
}

// Runs uq::write_kv and the reference on the same garbage-filled cache; expects equal
// bytes everywhere and the given counters. The writer's 16-lane (GPU) layout is run on
// the host too, so a host build checks the device code's layout and phases.
void expect_same_cache(const WriterCase& c, std::uint64_t bad_slots, std::uint64_t nonfinite) {
  const ReferenceBytes ref = reference_bytes(c, 99);
  const std::vector<std::uint8_t>& init = ref.init;
  const std::vector<std::uint8_t>& want = ref.want;
  EXPECT_EQ(ref.counts.bad_slots, bad_slots);
  EXPECT_EQ(ref.counts.nonfinite_rows, nonfinite);

  auto cache = to_device(init, "cache", c.num_blocks, c.block_size, c.Hk, c.slot_bytes);
  auto k = to_device(bf16_values(c.k), "k", c.T, c.Hk, 256);
  auto v = to_device(bf16_values(c.v), "v", c.T, c.Hk, 256);
  auto s = to_device(c.slots, "slots", c.T);
  uq::WriteKvConfig cfg;
  cfg.check = false;
  uq::KvWriter<Exec> writer(Exec(), cfg);
  writer.run(k, v, s, cache);
  const uq::Status st = writer.status();
  EXPECT_EQ(st[uq::Counter::bad_slots], bad_slots);
  EXPECT_EQ(st[uq::Counter::nonfinite_inputs], nonfinite);
  expect_same_bytes(to_host(cache), want, c.slot_bytes, "uq::write_kv");
  expect_gpu_layout_matches<16>(c, init, want, bad_slots, nonfinite);
}

WriterCase random_case(int T, int Hk, int block_size, int slot_bytes, std::uint64_t seed) {
  WriterCase c;
  c.T = T, c.Hk = Hk, c.block_size = block_size, c.slot_bytes = slot_bytes;
  c.num_blocks = (T + block_size - 1) / block_size + 2;
  RowGenerator kg(seed), vg(seed + 1);
  c.k.resize(static_cast<std::size_t>(T) * Hk * 256);
  c.v.resize(c.k.size());
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<float> sigma(0.0f, 2.0f);
  for (int r = 0; r < T * Hk; ++r) {
    kg.fill(&c.k[static_cast<std::size_t>(r) * 256], sigma(rng));
    vg.fill(&c.v[static_cast<std::size_t>(r) * 256], sigma(rng));
  }
  // a permutation of slots, so tokens land in scattered positions
  std::vector<std::int64_t> all(static_cast<std::size_t>(c.num_blocks) * block_size);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  std::shuffle(all.begin(), all.end(), rng);
  c.slots.assign(all.begin(), all.begin() + T);
  return c;
}

TEST(WriteKv, RandomRowsBitExact) {
  for (int bs : {16, 64, 256}) {
    expect_same_cache(random_case(257, 2, bs, 272, 10 + bs), 0, 0);
  }
  expect_same_cache(random_case(17, 3, 32, 288, 5), 0, 0);  // padded slots: padding untouched
}

// The device loop over batches (a team takes batch b, b + league, ...; the next batch's
// rows loaded before this one's phases): the league capped at 1 and 3 teams, so every
// team runs many batches, against the reference. (A host build runs its one-item path.)
TEST(WriteKv, ManyBatchesPerTeamBitExact) {
  const WriterCase c = random_case(257, 2, 64, 272, 31);
  const ReferenceBytes ref = reference_bytes(c, 8);
  const auto k = to_device(bf16_values(c.k), "k", c.T, c.Hk, 256);
  const auto v = to_device(bf16_values(c.v), "v", c.T, c.Hk, 256);
  const auto s = to_device(c.slots, "slots", c.T);
  for (int league : {1, 3}) {
    auto cache = to_device(ref.init, "cache", c.num_blocks, c.block_size, c.Hk, c.slot_bytes);
    uq::impl::StatusCounters<Exec> counters(Exec{});
    using Counts = typename uq::impl::StatusCounters<Exec>::view_type;
    const uq::impl::WriteKvGeneric<Exec, decltype(k), decltype(v), decltype(s), decltype(cache), Counts> w(
        k, v, s, cache, counters.view());
    w.launch(Exec{}, league);
    expect_same_bytes(to_host(cache), ref.want, c.slot_bytes, ("league " + std::to_string(league)).c_str());
    const uq::Status st = counters.read(Exec{});
    EXPECT_EQ(st[uq::Counter::bad_slots], 0u);
    EXPECT_EQ(st[uq::Counter::nonfinite_inputs], 0u);
  }
}

// V is not rotated, so V rows place exact values into groups. Each group's absmax
// fixes e (around base_e); the other values sit on midpoints m * 2^e, just above/below
// them, and beyond the +-5 saturation point. K rows are scaled Hadamard rows.
WriterCase midpoint_case(int base_e) {
  WriterCase c;
  c.T = 24;
  c.num_blocks = 2;
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  for (int t = 0; t < c.T; ++t) {
    std::vector<std::uint16_t> v(256, 0), k(256, 0);
    for (int g = 0; g < 8; ++g) {
      // absmax A with s = A * 0.156 landing on both sides of 2^(e +- 1/2)
      const int e = (t % 12) - 6 + g + base_e;
      const float A = std::ldexp(6.0f + 0.25f * static_cast<float>(t % 5), e);
      v[g * 32] = bf(t % 2 ? -A : A);
      for (int i = 1; i < 32; ++i) {
        const float m = mids[i % 7] * (i % 3 == 0 ? -1.0f : 1.0f);
        const int scale_e = e + (t % 3) - 1;  // near the group's exponent
        std::uint16_t x = bf(std::ldexp(m, scale_e));
        if (i % 5 == 1) ++x;  // one bf16 ulp further from zero
        if (i % 5 == 2) --x;  // one bf16 ulp closer to zero
        v[g * 32 + i] = x;
      }
    }
    // K: rows of the Hadamard matrix, so WHT(k) is exactly 16 * (chosen coefficients)
    for (int d = 0; d < 256; ++d) {
      const int j1 = (t * 37) % 256, j2 = (t * 11 + 5) % 256;
      const float c1 = 0.5f * static_cast<float>(1 + t % 4), c2 = 0.25f * static_cast<float>(t % 7);
      const float s1 = (__builtin_popcount(j1 & d) & 1) ? -c1 : c1;
      const float s2 = (__builtin_popcount(j2 & d) & 1) ? -c2 : c2;
      k[d] = bf(std::ldexp(s1 + s2, base_e));
    }
    c.v.insert(c.v.end(), v.begin(), v.end());
    c.k.insert(c.k.end(), k.begin(), k.end());
    c.slots.push_back(t);
  }
  return c;
}

TEST(WriteKv, MidpointsSaturationAndExponentBoundaries) {
  expect_same_cache(midpoint_case(0), 0, 0);
  // The writer scales by 2^(1-e) before its comparisons: the ends of the exponent range
  // (e from -126, where midpoints of the smallest groups are bf16 subnormals, up to 112).
  for (int base_e : {-120, -100, 95, 100}) expect_same_cache(midpoint_case(base_e), 0, 0);
}

// Rows that are not 16-byte aligned or not contiguous are read element by element,
// and slots that are not 4-byte aligned are written byte by byte: same bytes.
TEST(WriteKv, UnalignedRowsAndSlotsBitExact) {
  const WriterCase c = random_case(37, 2, 16, 276, 21);
  const ReferenceBytes ref = reference_bytes(c, 7);
  const std::vector<std::uint8_t>& init = ref.init;
  const std::vector<std::uint8_t>& want = ref.want;
  // k: rows one element into a wider allocation (2-byte aligned); v: LayoutLeft.
  DeviceView<uq::bf16***> kwide("kwide", c.T, c.Hk, 264);
  Kokkos::View<uq::bf16***, Kokkos::LayoutLeft, Mem> vleft("vleft", c.T, c.Hk, 256);
  {
    auto hk = Kokkos::create_mirror_view(kwide);
    auto hv = Kokkos::create_mirror_view(vleft);
    for (int t = 0; t < c.T; ++t)
      for (int h = 0; h < c.Hk; ++h)
        for (int d = 0; d < 256; ++d) {
          const std::size_t i = (static_cast<std::size_t>(t) * c.Hk + h) * 256 + d;
          hk(t, h, d + 1).bits = c.k[i];
          hv(t, h, d).bits = c.v[i];
        }
    Kokkos::deep_copy(kwide, hk);
    Kokkos::deep_copy(vleft, hv);
  }
  auto k = Kokkos::subview(kwide, Kokkos::ALL, Kokkos::ALL, std::make_pair(1, 257));
  ASSERT_FALSE(uq::impl::wio::rows_are_chunked(k));
  ASSERT_FALSE(uq::impl::wio::rows_are_chunked(vleft));
  // cache: one byte into its allocation, so no slot start is 4-byte aligned.
  DeviceView<std::uint8_t*> raw("raw", init.size() + 1);
  Kokkos::View<std::uint8_t****, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> cache(
      raw.data() + 1, c.num_blocks, c.block_size, c.Hk, c.slot_bytes);
  ASSERT_FALSE(uq::impl::wio::words_are_aligned(cache, 4));
  Kokkos::deep_copy(cache, Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Kokkos::HostSpace,
                                        Kokkos::MemoryUnmanaged>(init.data(), c.num_blocks, c.block_size, c.Hk,
                                                                 c.slot_bytes));
  uq::write_kv(k, vleft, to_device(c.slots, "slots", c.T), cache);
  auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cache);
  expect_same_bytes(std::vector<std::uint8_t>(got.data(), got.data() + got.size()), want, c.slot_bytes,
                    "unaligned rows and slots");
}

TEST(WriteKv, TinyHugeZeroSubnormalAndNonFinite) {
  WriterCase c;
  c.T = 8;
  c.num_blocks = 1;
  const float nan = std::nanf(""), inf = INFINITY;
  std::uint64_t nonfinite = 0;
  for (int t = 0; t < c.T; ++t) {
    std::vector<std::uint16_t> k(256, 0), v(256, 0);
    switch (t) {
      case 0: break;                                                    // all zero
      case 1: for (auto& x : v) x = bf(1e-38f); for (auto& x : k) x = bf(-1e-38f); break;  // flushed
      case 2: for (int d = 0; d < 256; ++d) v[d] = 0x0001 + d % 3, k[d] = 0x8002; break;    // bf16 subnormals
      case 3: for (int d = 0; d < 256; ++d) v[d] = bf(d % 2 ? 3e38f : -1e37f), k[d] = bf(1e34f * (d % 5)); break;  // huge, WHT stays finite
      case 4: v[40] = bf(nan); v[41] = bf(2.0f); k[3] = bf(1.0f); ++nonfinite; break;  // one V group zeroed
      case 5: k[7] = bf(inf); v[0] = bf(1.0f); ++nonfinite; break;   // the whole K row turns non-finite
      case 6: for (auto& x : k) x = bf(3.3e38f); ++nonfinite; break; // WHT overflows to inf
      default: v[255] = bf(-5.0f); k[0] = bf(5.0f); break;
    }
    c.k.insert(c.k.end(), k.begin(), k.end());
    c.v.insert(c.v.end(), v.begin(), v.end());
    c.slots.push_back(t * 2);
  }
  expect_same_cache(c, 0, nonfinite);
}

TEST(WriteKv, SkippedAndOutOfRangeSlots) {
  WriterCase c = random_case(40, 2, 16, 272, 3);
  c.slots[0] = -1;                          // skipped: untouched, not counted
  c.slots[5] = -1000;
  c.slots[7] = c.num_blocks * 16;           // just past the end: counted, not written
  c.slots[9] = std::int64_t(1) << 40;
  expect_same_cache(c, 2, 0);
}

TEST(WriteKv, CheckedCallThrowsOnBadData) {
  WriterCase c = random_case(4, 1, 16, 272, 4);
  c.slots[2] = 1 << 20;
  std::vector<uq::bf16> kb(c.k.size()), vb(c.v.size());
  for (std::size_t i = 0; i < kb.size(); ++i) kb[i].bits = c.k[i], vb[i].bits = c.v[i];
  auto k = to_device(kb, "k", c.T, 1, 256);
  auto v = to_device(vb, "v", c.T, 1, 256);
  auto s = to_device(c.slots, "slots", c.T);
  DeviceView<std::uint8_t****> cache("cache", c.num_blocks, 16, 1, 272);
  expect_error([&] { uq::write_kv(k, v, s, cache); }, {"uq::write_kv", "bad_slots=1"});
}

TEST(WriteKv, Int32SlotMappingAccepted) {
  WriterCase c = random_case(20, 1, 32, 272, 8);
  std::vector<std::int32_t> s32(c.slots.begin(), c.slots.end());
  std::vector<uq::bf16> kb(c.k.size()), vb(c.v.size());
  for (std::size_t i = 0; i < kb.size(); ++i) kb[i].bits = c.k[i], vb[i].bits = c.v[i];
  auto k = to_device(kb, "k", c.T, 1, 256);
  auto v = to_device(vb, "v", c.T, 1, 256);
  DeviceView<std::uint8_t****> a("a", c.num_blocks, 32, 1, 272), b("b", c.num_blocks, 32, 1, 272);
  uq::write_kv(k, v, to_device(c.slots, "s64", c.T), a);
  uq::write_kv(k, v, to_device(s32, "s32", c.T), b);
  EXPECT_EQ(to_host(a), to_host(b));
}

// A writer object skips its host checks only for the arguments it last checked: new
// views are checked again (here a cache that is too narrow, and an aliasing one).
TEST(WriteKv, ReusedWriterChecksNewArguments) {
  WriterCase c = random_case(8, 1, 16, 272, 40);
  std::vector<uq::bf16> kb(c.k.size()), vb(c.v.size());
  for (std::size_t i = 0; i < kb.size(); ++i) kb[i].bits = c.k[i], vb[i].bits = c.v[i];
  auto k = to_device(kb, "k", c.T, 1, 256);
  auto v = to_device(vb, "v", c.T, 1, 256);
  auto s = to_device(c.slots, "slots", c.T);
  DeviceView<std::uint8_t****> cache("cache", c.num_blocks, 16, 1, 272), narrow("narrow", c.num_blocks, 16, 1, 268);
  uq::WriteKvConfig cfg;
  cfg.check = false;
  const uq::KvWriter<Exec> writer(Exec(), cfg);
  writer.run(k, v, s, cache);
  writer.run(k, v, s, cache);  // same arguments: checks skipped
  expect_error([&] { writer.run(k, v, s, narrow); }, {"uq::write_kv", "kv_cache", "slot_bytes", "268"});
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> k_in_cache(
      reinterpret_cast<uq::bf16*>(cache.data()), c.T, 1, 256);
  expect_error([&] { writer.run(k_in_cache, v, s, cache); }, {"uq::write_kv", "kv_cache", "memory disjoint from 'k'"});
  writer.run(k, v, s, cache);  // and the good ones again
  EXPECT_TRUE(writer.status().ok());
}

// check = false: one kernel and no copy (so no host synchronisation) per call, at decode
// sizes and beyond; check = true adds the counter reset and read-back.
TEST(WriteKv, OneLaunchPerUncheckedCall) {
  for (int T : {1, 64, 256, 300}) {
    WriterCase c = random_case(T, 2, 16, 272, 30 + T);
    std::vector<uq::bf16> kb(c.k.size()), vb(c.v.size());
    for (std::size_t i = 0; i < kb.size(); ++i) kb[i].bits = c.k[i], vb[i].bits = c.v[i];
    auto k = to_device(kb, "k", c.T, c.Hk, 256);
    auto v = to_device(vb, "v", c.T, c.Hk, 256);
    auto s = to_device(c.slots, "slots", c.T);
    DeviceView<std::uint8_t****> cache("cache", c.num_blocks, 16, c.Hk, 272);
    uq::WriteKvConfig unchecked;
    unchecked.check = false;
    const uq::KvWriter<Exec> writer(Exec(), unchecked);
    const uq::KvWriter<Exec> checked(Exec(), uq::WriteKvConfig{});
    int dispatches = 0, copies = 0;
    {
      DispatchCount count;
      writer.run(k, v, s, cache);
      dispatches = DispatchCount::dispatches(), copies = DispatchCount::copies();
    }
    EXPECT_EQ(dispatches, 1) << "T = " << T;
    EXPECT_EQ(copies, 0) << "T = " << T;
    {
      DispatchCount count;
      checked.run(k, v, s, cache);
      dispatches = DispatchCount::dispatches(), copies = DispatchCount::copies();
    }
    EXPECT_GE(dispatches, 1) << "T = " << T;
    EXPECT_GE(copies, 1) << "T = " << T;  // the counters read back
    EXPECT_GT(dispatches + copies, 1) << "T = " << T;
  }
}

}  // namespace
