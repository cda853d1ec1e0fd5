// uq::write_index_keys against the float64 reference writer: every byte of the cache
// bit-exact (written pages and untouched ones), on random and adversarial keys (ties,
// saturation, zero and tiny groups, NaN/inf), bf16 and float keys, int32 and int64
// slots, strided keys; status counts; every host error path.
#include "test_index_common.hpp"
#include "uq/write_index_keys.hpp"
#include "writer_dispatch_count.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace {

using namespace uqtest;
using namespace uqtest::index;

using CacheView = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem>;

// A cache pre-filled with random bytes, so that untouched bytes are checked too.
std::vector<std::uint8_t> noise_cache(std::mt19937_64& rng, std::int64_t num_blocks) {
  std::vector<std::uint8_t> c(static_cast<std::size_t>(num_blocks) * kPage);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : c) b = static_cast<std::uint8_t>(byte(rng));
  return c;
}

// Slots: a random injective map of tokens to positions of the cache, some skipped (-1).
std::vector<std::int64_t> random_slots(std::mt19937_64& rng, std::int64_t T, std::int64_t num_blocks,
                                       double skip_fraction) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(num_blocks) * kBlk);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  std::bernoulli_distribution skip(skip_fraction);
  std::vector<std::int64_t> slots(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) slots[t] = skip(rng) ? -1 - static_cast<std::int64_t>(t % 3) : all[t];
  return slots;
}

struct WriteResult {
  std::vector<std::uint8_t> cache;
  uq::Status status;
};

// Runs the library writer with check = false on a copy of `initial`; keys are given
// as float values (exactly representable in KeyT).
template <class KeyT, class SlotT, class KeyLayout = Kokkos::LayoutRight>
WriteResult run_writer(const std::vector<float>& keys, const std::vector<std::int64_t>& slots,
                       const std::vector<std::uint8_t>& initial) {
  const std::int64_t T = static_cast<std::int64_t>(slots.size());
  const std::int64_t NB = static_cast<std::int64_t>(initial.size()) / kPage;
  Kokkos::View<KeyT**, KeyLayout, Mem> dkeys("keys", T, kD);
  auto hk = Kokkos::create_mirror_view(dkeys);
  for (std::int64_t t = 0; t < T; ++t)
    for (int d = 0; d < kD; ++d) {
      if constexpr (std::is_same<KeyT, uq::bf16>::value)
        hk(t, d) = uq::codec::float_to_bf16(keys[t * kD + d]);
      else
        hk(t, d) = keys[t * kD + d];
    }
  Kokkos::deep_copy(dkeys, hk);
  std::vector<SlotT> s(slots.begin(), slots.end());
  auto dslots = to_device(s, "slots", T);
  auto dcache = to_device(initial, "cache", NB, kPage);
  uq::IndexWriterConfig cfg;
  cfg.check = false;
  uq::IndexKeyWriter<Exec> writer(Exec(), cfg);
  writer.run(dkeys, dslots, dcache);
  return {to_host(dcache), writer.status()};
}

void expect_same_cache(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& ref) {
  ASSERT_EQ(got.size(), ref.size());
  int reported = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (got[i] != ref[i] && ++reported <= 10)
      ADD_FAILURE() << "cache byte " << i << " (page " << i / kPage << ", offset " << i % kPage << "): got 0x"
                    << std::hex << int(got[i]) << ", reference 0x" << int(ref[i]) << std::dec;
  EXPECT_EQ(reported, 0);
}

template <class KeyT, class SlotT, class KeyLayout = Kokkos::LayoutRight>
void check_against_reference(const std::vector<float>& keys, const std::vector<std::int64_t>& slots,
                             const std::vector<std::uint8_t>& initial) {
  std::vector<std::uint8_t> ref = initial;
  const auto counts = uqref::nv_write_index_keys(keys.data(), slots.data(), static_cast<std::int64_t>(slots.size()),
                                                 ref.data(), static_cast<std::int64_t>(initial.size()) / kPage);
  const WriteResult got = run_writer<KeyT, SlotT, KeyLayout>(keys, slots, initial);
  expect_same_cache(got.cache, ref);
  EXPECT_EQ(got.status[uq::Counter::bad_slots], counts.bad_slots);
  EXPECT_EQ(got.status[uq::Counter::nonfinite_inputs], counts.nonfinite_rows);
  EXPECT_EQ(got.status[uq::Counter::bad_block_ids], 0u);
}

// Rounds every key to bf16 (so bf16 and float runs see the same values).
std::vector<float> bf16_values(std::vector<float> k) {
  for (auto& x : k) x = uq::codec::round_bf16(x);
  return k;
}

TEST(IndexWriter, RandomKeysFloatInt64) {
  std::mt19937_64 rng(11);
  const std::int64_t NB = 17, T = 1001;
  const auto keys = random_keys(rng, T, 0.7f);
  const auto slots = random_slots(rng, T, NB, 0.1);
  check_against_reference<float, std::int64_t>(keys, slots, noise_cache(rng, NB));
}

TEST(IndexWriter, RandomKeysBf16Int32StridedKeys) {
  std::mt19937_64 rng(12);
  const std::int64_t NB = 3, T = 257;
  const auto keys = bf16_values(random_keys(rng, T, 3.0f));
  const auto slots = random_slots(rng, T, NB, 0.05);
  check_against_reference<uq::bf16, std::int32_t, Kokkos::LayoutLeft>(keys, slots, noise_cache(rng, NB));
  check_against_reference<float, std::int32_t, Kokkos::LayoutLeft>(keys, slots, noise_cache(rng, NB));
}

// Key rows that are not 16-byte aligned are read element by element, and a cache whose
// pages are not 4-byte aligned is written byte by byte: the same bytes.
TEST(IndexWriter, UnalignedKeysAndCacheBitExact) {
  std::mt19937_64 rng(17);
  const std::int64_t NB = 3, T = 300;
  const auto keys = bf16_values(random_keys(rng, T, 1.5f));
  const auto slots = random_slots(rng, T, NB, 0.1);
  const auto initial = noise_cache(rng, NB);
  std::vector<std::uint8_t> ref = initial;
  uqref::nv_write_index_keys(keys.data(), slots.data(), T, ref.data(), NB);
  // keys: rows one element into a wider allocation (2-byte aligned)
  Kokkos::View<uq::bf16**, Kokkos::LayoutRight, Mem> wide("wide", T, kD + 8);
  auto hw = Kokkos::create_mirror_view(wide);
  for (std::int64_t t = 0; t < T; ++t)
    for (int d = 0; d < kD; ++d) hw(t, d + 1) = uq::codec::float_to_bf16(keys[t * kD + d]);
  Kokkos::deep_copy(wide, hw);
  auto dkeys = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(1, kD + 1));
  ASSERT_FALSE(uq::impl::wio::rows_are_chunked(dkeys));
  // cache: one byte into its allocation
  Kokkos::View<std::uint8_t*, Mem> raw("raw", initial.size() + 1);
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> dcache(raw.data() + 1, NB, kPage);
  ASSERT_FALSE(uq::impl::wio::words_are_aligned(dcache, 4));
  Kokkos::deep_copy(dcache, Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, Kokkos::HostSpace,
                                         Kokkos::MemoryUnmanaged>(initial.data(), NB, kPage));
  uq::IndexWriterConfig cfg;
  cfg.check = false;
  uq::IndexKeyWriter<Exec> writer(Exec(), cfg);
  writer.run(dkeys, to_device(slots, "slots", T), dcache);
  auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dcache);
  expect_same_cache(std::vector<std::uint8_t>(got.data(), got.data() + got.size()), ref);
  EXPECT_TRUE(writer.status().ok());
}

TEST(IndexWriter, SingleTokenAndEmpty) {
  std::mt19937_64 rng(13);
  const auto keys = random_keys(rng, 1);
  check_against_reference<float, std::int64_t>(keys, {127}, noise_cache(rng, 1));
  check_against_reference<float, std::int64_t>({}, {}, noise_cache(rng, 1));
}

// Groups built so that x / s lands exactly on every tie point, on both sides of it, on
// saturation and on the subnormal scale range; plus zero, -0, tiny and huge groups.
std::vector<float> adversarial_keys() {
  std::vector<float> rows;
  auto add_row = [&](const std::vector<float>& row) {
    std::vector<float> r(kD, 0.0f);
    for (std::size_t i = 0; i < row.size() && i < r.size(); ++i) r[i] = row[i];
    rows.insert(rows.end(), r.begin(), r.end());
  };
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  // Scales whose A = 6 s is exact and x = mid * s, x / s exact: every E4M3 scale in a
  // range of binades, both signs.
  const float scales[] = {1.0f, 0.5625f, 1.125f, 1.5f, 0.015625f, 448.0f, 0.25f, 3.0f};
  for (float s : scales) {
    std::vector<float> row;
    for (int g = 0; g < 8; ++g) {
      row.push_back(6.0f * s);  // A = 6 s -> scale byte exactly s
      for (int i = 0; i < 7; ++i) {
        const float m = mids[i] * s;
        const float v = (g % 4 == 0) ? m : (g % 4 == 1) ? -m : (g % 4 == 2) ? std::nextafter(m, 0.0f)
                                                                           : std::nextafter(m, 1e30f);
        row.push_back(v);
        row.push_back(-v);
      }
      row.push_back(0.0f);
    }
    add_row(row);
  }
  // Saturation: scales above 448 (x / 448 far beyond 6). Kept below 2^53 * 448: see
  // ExtremeValuesSaturate for the float range.
  add_row({1e5f, -3e4f, 2688.0f, 2689.0f, -2687.0f, 1e12f, -3e14f, 7.0f, 1.0f, 0.0f, 2688.5f, 448.0f * 6.5f});
  // Zero groups, -0, tiny groups (A / 6 rounds to 0 or to the smallest subnormal).
  {
    std::vector<float> row(kD, 0.0f);
    row[16] = -0.0f;
    row[32] = std::ldexp(1.0f, -10) * 6.0f;            // A / 6 = 2^-10: tie -> scale 0
    row[48] = std::nextafter(std::ldexp(1.0f, -10) * 6.0f, 1.0f);  // just above: 2^-9
    row[49] = -std::ldexp(1.0f, -12);
    row[64] = 1e-30f;
    row[80] = std::ldexp(1.0f, -9) * 6.0f * 1.5f;      // A / 6 = 1.5 * 2^-9 -> tie to 2^-8
    row[81] = std::ldexp(1.0f, -11);
    add_row(row);
  }
  // A / 6 is not exact and rounds to an E4M3 value below it: y slightly above 6.
  add_row({6.9f, 6.8f, -6.7f, 3.45f, 0.01f, 13.1f, 26.3f, -52.9f, 100.0f, 1.7f});
  return rows;
}

TEST(IndexWriter, AdversarialTiesSaturationZeros) {
  std::mt19937_64 rng(14);
  const std::vector<float> keys = adversarial_keys();
  const std::int64_t T = static_cast<std::int64_t>(keys.size()) / kD;
  std::vector<std::int64_t> slots(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) slots[t] = 130 + 3 * t;  // spread over two pages
  check_against_reference<float, std::int64_t>(keys, slots, noise_cache(rng, 2));
  check_against_reference<uq::bf16, std::int64_t>(bf16_values(keys), slots, noise_cache(rng, 2));
  // The tie rows really hit ties: the reference picks the even code there.
  std::vector<std::uint8_t> cache(kPage, 0);
  std::int64_t slot0 = 0;
  uqref::nv_write_index_keys(keys.data(), &slot0, 1, cache.data(), 1);
  EXPECT_EQ(cache[8192], 0x38);     // scale 1.0
  EXPECT_EQ(cache[0] & 0xf, 7);     // 6.0
  EXPECT_EQ(cache[0] >> 4, 0);      // 0.25 -> 0
  EXPECT_EQ(cache[1] & 0xf, 0);     // -0.25 -> 0, not 8
  EXPECT_EQ(cache[1] >> 4, 2);      // 0.75 -> 1.0
}

// Values near the float range: x / 448 is ~1e35, far beyond 6, and must saturate to
// code 7 / 15 (spec §3). Checked against hand-derived bytes, not the reference:
// uqref::nv_fp4_code picks the nearest magnitude by double distances, which all round
// to the same value for |y| above ~2^53 and then returns code 6 (4.0) instead of 7
// (reported to the reference's owner).
TEST(IndexWriter, ExtremeValuesSaturate) {
  std::vector<float> keys(kD, 0.0f);
  const float big[] = {3.4e38f, -3.4e38f, 1e38f, -1e30f, 2687.0f, -1e5f, 0.0f, 1.0f};
  for (int i = 0; i < 8; ++i) keys[i] = big[i];
  keys[16] = std::numeric_limits<float>::max();
  keys[17] = -std::numeric_limits<float>::max() / 2;
  std::mt19937_64 rng(16);
  const WriteResult got = run_writer<float, std::int64_t>(keys, {0}, noise_cache(rng, 1));
  EXPECT_EQ(got.cache[8192 + 0], 0x7e);  // scale 448 (saturated e4m3(A / 6))
  EXPECT_EQ(got.cache[8192 + 1], 0x7e);
  EXPECT_EQ(got.cache[0], 0xf7);  // +6, -6
  EXPECT_EQ(got.cache[1], 0xf7);  // +6, -6
  EXPECT_EQ(got.cache[2], 0xf7);  // 2687 / 448 = 5.998 -> +6; -1e5 -> -6
  EXPECT_EQ(got.cache[3], 0x00);  // 1 / 448 -> 0 (below 0.25), 0
  EXPECT_EQ(got.cache[8], 0xf7);
  EXPECT_TRUE(got.status.ok());
}

TEST(IndexWriter, NonFiniteGroupsAndBadSlotsAreCounted) {
  std::mt19937_64 rng(15);
  const std::int64_t NB = 2, T = 9;
  std::vector<float> keys = random_keys(rng, T);
  const float inf = std::numeric_limits<float>::infinity();
  keys[0 * kD + 5] = std::nanf("");  // token 0: one bad group
  keys[1 * kD + 3] = inf;            // token 1: two bad groups (counted once)
  keys[1 * kD + 100] = -inf;
  keys[2 * kD + 127] = std::nanf("");  // token 2: bad, but skipped -> not examined
  keys[3 * kD + 64] = inf;             // token 3: bad, out-of-range slot -> bad_slots only
  const std::vector<std::int64_t> slots = {0, 255, -1, 256, 1000, 7, 128, 129, 3};
  check_against_reference<float, std::int64_t>(keys, slots, noise_cache(rng, NB));
  check_against_reference<uq::bf16, std::int32_t>(bf16_values(keys), slots, noise_cache(rng, NB));
  const WriteResult got = run_writer<float, std::int64_t>(keys, slots, noise_cache(rng, NB));
  EXPECT_EQ(got.status[uq::Counter::nonfinite_inputs], 2u);
  EXPECT_EQ(got.status[uq::Counter::bad_slots], 2u);
  // Token 0's bad group (dims 0..15) is a zero group; its other groups are written.
  EXPECT_EQ(got.cache[8192 + 0], 0);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(got.cache[j], 0);
  // With check = true the convenience function throws, naming the counts.
  auto dkeys = to_device(keys, "keys", T, kD);
  auto dslots = to_device(slots, "slots", T);
  auto dcache = to_device(noise_cache(rng, NB), "cache", NB, kPage);
  expect_error([&] { uq::write_index_keys(dkeys, dslots, dcache); },
               {"uq::write_index_keys", "keys/slot_mapping", "bad_slots=2", "nonfinite_inputs=2"});
  // The writer object accumulates with check = false until reset.
  uq::IndexWriterConfig cfg;
  cfg.check = false;
  uq::IndexKeyWriter<Exec> writer(Exec(), cfg);
  writer.run(dkeys, dslots, dcache);
  writer.run(dkeys, dslots, dcache);
  EXPECT_EQ(writer.status()[uq::Counter::bad_slots], 4u);
  writer.reset_status();
  EXPECT_TRUE(writer.status().ok());
}

// check = false: one kernel and no copy (so no host synchronisation) per call.
TEST(IndexWriter, OneLaunchPerUncheckedCall) {
  std::mt19937_64 rng(18);
  for (std::int64_t T : {1, 64, 256, 300}) {
    const std::int64_t NB = 4;
    auto dkeys = to_device(random_keys(rng, T), "keys", T, kD);
    auto dslots = to_device(random_slots(rng, T, NB, 0.0), "slots", T);
    auto dcache = to_device(noise_cache(rng, NB), "cache", NB, kPage);
    uq::IndexWriterConfig unchecked;
    unchecked.check = false;
    const uq::IndexKeyWriter<Exec> writer(Exec(), unchecked);
    int dispatches = 0, copies = 0;
    {
      DispatchCount count;
      writer.run(dkeys, dslots, dcache);
      dispatches = DispatchCount::dispatches(), copies = DispatchCount::copies();
    }
    EXPECT_EQ(dispatches, 1) << "T = " << T;
    EXPECT_EQ(copies, 0) << "T = " << T;
    {
      DispatchCount count;
      uq::write_index_keys(dkeys, dslots, dcache);  // check = true
      dispatches = DispatchCount::dispatches(), copies = DispatchCount::copies();
    }
    EXPECT_GE(copies, 1) << "T = " << T;
    EXPECT_GT(dispatches + copies, 1) << "T = " << T;
  }
}

TEST(IndexWriter, HostErrors) {
  const std::int64_t NB = 2, T = 3;
  Kokkos::View<float**, Mem> keys("keys", T, kD);
  Kokkos::View<std::int64_t*, Mem> slots("slots", T);
  CacheView cache("cache", NB, kPage);

  Kokkos::View<float**, Mem> keys_wide("keys", T, 129);
  expect_error([&] { uq::write_index_keys(keys_wide, slots, cache); },
               {"uq::write_index_keys", "'keys'", "extent(1) == 128", "got 129"});
  Kokkos::View<std::int64_t*, Mem> slots_short("slots", T - 1);
  expect_error([&] { uq::write_index_keys(keys, slots_short, cache); },
               {"uq::write_index_keys", "'slot_mapping'", "extent(0) == 3", "got 2"});
  CacheView cache_narrow("cache", NB, 9215);
  expect_error([&] { uq::write_index_keys(keys, slots, cache_narrow); },
               {"uq::write_index_keys", "'index_cache'", "extent(1) == 9216", "got 9215"});
  Kokkos::View<std::uint8_t**, Kokkos::LayoutLeft, Mem> cache_left("cache", NB, kPage);
  expect_error([&] { uq::write_index_keys(keys, slots, cache_left); },
               {"uq::write_index_keys", "'index_cache'", "stride(1) == 1", "got 2"});
  // keys living inside the cache's memory
  Kokkos::View<float**, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> keys_in_cache(
      reinterpret_cast<float*>(cache.data()), T, kD);
  expect_error([&] { uq::write_index_keys(keys_in_cache, slots, cache); },
               {"uq::write_index_keys", "'index_cache'", "memory disjoint from 'keys'", "overlapping memory"});
  Kokkos::View<std::int64_t*, Mem, Kokkos::MemoryUnmanaged> slots_in_cache(
      reinterpret_cast<std::int64_t*>(cache.data()) + 8, T);
  expect_error([&] { uq::write_index_keys(keys, slots_in_cache, cache); },
               {"uq::write_index_keys", "'index_cache'", "memory disjoint from 'slot_mapping'"});
  // Native: the host path where this build has it for the execution space (the host spaces of
  // GCC and Clang builds), an error elsewhere.
  uq::IndexWriterConfig native;
  native.backend = uq::Backend::Native;
  const uq::Path tuned =
      uq::impl::TunedCall<Exec, uq::impl::IndexKeyWriteLaunch>::tuned_path(uq::impl::device_info(Exec()));
  if (tuned == uq::Path::Generic) {
    expect_error([&] { uq::write_index_keys(Exec(), keys, slots, cache, native); },
                 {"uq::write_index_keys", "config.backend", "index key writer", "Backend::Native on"});
  } else {
    uq::IndexKeyWriter<Exec> writer(Exec(), native);
    writer.run(keys, slots, cache);
    EXPECT_EQ(writer.path(), tuned);
    // Rows that are not contiguous are more than the host path takes: Native says so.
    Kokkos::View<float**, Kokkos::LayoutLeft, Mem> keys_left("keys left", T, kD);
    expect_error([&] { writer.run(keys_left, slots, cache); },
                 {"uq::write_index_keys", "config.backend", "host-simd", "stride(1) == 1"});
  }
  // Generic is accepted and writes.
  uq::IndexWriterConfig generic;
  generic.backend = uq::Backend::Generic;
  EXPECT_NO_THROW(uq::write_index_keys(Exec(), keys, slots, cache, generic));
}

}  // namespace
