// The index writer's host path (uq/impl/write_index_keys_host.hpp) against the scalar
// rule it replaces (codes::quotient + codes::nv_code_words16, what the generic kernel
// computes), bit for bit:
//   - its threshold table: each X_i(s) is the boundary of the scalar rule (magnitude <= i
//     at X, > i one float above), for every scale byte; with the monotonicity of the
//     rule in |x| (correctly rounded division is monotone, the count is monotone in |y|)
//     that makes "|x| > X_i" equal to the rule's i-th compare for every float;
//   - the vector code words: every bf16 pattern against every scale byte (exhaustive),
//     and for float rows every float within 2^12 ulps of each threshold plus random
//     floats, both signs;
//   - the whole kernel against the generic kernel on the same views: random, adversarial
//     and non-finite rows, skipped and bad slots, bf16 and float.
#include "test_index_common.hpp"
#include "uq/impl/write_index_keys_generic.hpp"
#include "uq/impl/write_index_keys_host.hpp"
#include "uq/write_index_keys.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#if defined(UQ_INDEX_WRITER_HOST_PATH)

namespace {

using namespace uqtest;
using namespace uqtest::index;
namespace ih = uq::impl::index_host;
namespace codes = uq::impl::codes;
using uq::codec::bits_float;
using uq::codec::float_bits;

// The scalar rule's code word of 16 values at scale byte b (the generic kernel's
// write_group: codes 0 when the scale is 0).
std::uint64_t scalar_word(const float* x, int b) {
  const float s = codes::e4m3_nonnegative_to_float(static_cast<std::uint8_t>(b));
  std::uint32_t words[2] = {0, 0};
  if (s != 0.0f) {
    const float r = 1.0f / s;
    float y[16];
    for (int j = 0; j < 16; ++j) y[j] = codes::quotient(x[j], s, r);
    codes::nv_code_words16(y, words);
  }
  return words[0] | (static_cast<std::uint64_t>(words[1]) << 32);
}

TEST(IndexWriterHost, ThresholdsAreTheScalarRulesBoundaries) {
  const ih::Thresholds& t = ih::thresholds();
  for (int b = 0; b < ih::kScaleBytes; ++b) {
    const float s = codes::e4m3_nonnegative_to_float(static_cast<std::uint8_t>(b));
    for (int i = 0; i < ih::kThresholds; ++i) {
      const std::int32_t x = t.x32[b][i];
      EXPECT_EQ(t.x16[b][i], static_cast<std::int16_t>(x >> 16)) << "b " << b << " i " << i;
      for (int lane = 0; lane < static_cast<int>(sizeof(ih::I32v) / 4); ++lane) {
        EXPECT_EQ(t.v32[b][i][lane], x);
        EXPECT_EQ(t.v16[b][i][lane], t.x16[b][i]);
      }
      if (s == 0.0f) {
        EXPECT_EQ(x, 0x7fffffff) << "b 0: no value may pass";
        continue;
      }
      ASSERT_GE(x, 0);
      ASSERT_LT(x, 0x7f800000);
      EXPECT_LE(ih::scalar_magnitude(bits_float(static_cast<std::uint32_t>(x)), s), static_cast<unsigned>(i))
          << "b " << b << " i " << i;
      EXPECT_GT(ih::scalar_magnitude(bits_float(static_cast<std::uint32_t>(x) + 1u), s), static_cast<unsigned>(i))
          << "b " << b << " i " << i;
      if (i > 0) EXPECT_GT(x, t.x32[b][i - 1]);
    }
  }
}

// The bf16 scale table against the generic kernel's rule (finite ? nv_scale_byte(A) : 0)
// on every maximum pattern, and the float path's masked form on the same values.
TEST(IndexWriterHost, ScaleBytesMatchTheScalarRule) {
  const ih::Thresholds& t = ih::thresholds();
  for (std::uint32_t a = 0; a < 0x8000u; ++a) {
    const bool finite = a < 0x7f80u;
    const std::uint8_t want = finite ? codes::nv_scale_byte(bits_float(a << 16)) : std::uint8_t{0};
    ASSERT_EQ(ih::Lanes<uq::bf16>::scale(t, static_cast<std::int32_t>(a)), want) << "pattern 0x" << std::hex << a;
    ASSERT_EQ(ih::Lanes<float>::scale(t, static_cast<std::int32_t>(a << 16)), want) << "pattern 0x" << std::hex << a;
  }
  for (std::uint32_t u : {0x7f800000u, 0x7fc00000u, 0x7fffffffu, 0x7f7fffffu, 1u, 0x3c000000u})
    EXPECT_EQ(ih::Lanes<float>::scale(t, static_cast<std::int32_t>(u)),
              u < 0x7f800000u ? codes::nv_scale_byte(bits_float(u)) : std::uint8_t{0});
}

TEST(IndexWriterHost, Bf16CodesMatchTheScalarRuleOnEveryPatternAndScale) {
  // every bf16 pattern, 16 to a group (the non-finite ones only at b = 0, the only scale
  // a group holding them gets)
  std::vector<std::int16_t> finite, all;
  for (std::uint32_t p = 0; p < 65536; ++p) {
    all.push_back(static_cast<std::int16_t>(p));
    if ((p & 0x7f80u) != 0x7f80u) finite.push_back(static_cast<std::int16_t>(p));
  }
  while (finite.size() % 16) finite.push_back(0);
  long checked = 0, wrong = 0;
  for (int b = 0; b < ih::kScaleBytes; ++b) {
    const std::vector<std::int16_t>& in = b == 0 ? all : finite;
    for (std::size_t g = 0; g < in.size(); g += 16) {
      float x[16];
      for (int j = 0; j < 16; ++j) x[j] = bits_float(static_cast<std::uint32_t>(static_cast<std::uint16_t>(in[g + j])) << 16);
      const std::uint64_t want = b == 0 ? 0 : scalar_word(x, b);
      const std::uint64_t got = ih::group_code_word_of<uq::bf16>(&in[g], b);
      ++checked;
      if (got != want && ++wrong <= 10)
        ADD_FAILURE() << "b " << b << " group at pattern 0x" << std::hex << static_cast<std::uint16_t>(in[g])
                      << ": host 0x" << got << ", scalar 0x" << want;
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << checked << " groups";
}

TEST(IndexWriterHost, FloatCodesMatchTheScalarRuleAroundEveryThreshold) {
  const ih::Thresholds& t = ih::thresholds();
  std::mt19937 rng(17);
  std::uniform_int_distribution<std::uint32_t> any(0, 0x7f7fffffu);
  long checked = 0, wrong = 0;
  for (int b = 1; b < ih::kScaleBytes; ++b) {
    std::vector<std::uint32_t> v;
    constexpr std::uint32_t kRadius = 1u << 12;
    for (int i = 0; i < ih::kThresholds; ++i) {
      const std::uint32_t x = static_cast<std::uint32_t>(t.x32[b][i]);
      for (std::uint32_t u = x - kRadius; u != x + kRadius; ++u) v.push_back(u), v.push_back(u | 0x80000000u);
    }
    for (int k = 0; k < 1 << 14; ++k) {
      const std::uint32_t u = any(rng);
      v.push_back(k & 1 ? u | 0x80000000u : u);
    }
    for (std::uint32_t u : {0u, 0x80000000u, 1u, 0x80000001u, 0x7f7fffffu, 0xff7fffffu}) v.push_back(u);
    while (v.size() % 16) v.push_back(0);
    for (std::size_t g = 0; g < v.size(); g += 16) {
      float x[16];
      std::int32_t bits[16];
      for (int j = 0; j < 16; ++j) x[j] = bits_float(v[g + j]), bits[j] = static_cast<std::int32_t>(v[g + j]);
      const std::uint64_t want = scalar_word(x, b), got = ih::group_code_word_of<float>(bits, b);
      ++checked;
      if (got != want && ++wrong <= 10)
        ADD_FAILURE() << "b " << b << " group at bits 0x" << std::hex << v[g] << ": host 0x" << got << ", scalar 0x"
                      << want;
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << checked << " groups";
}

// Rows that reach every branch: random (several ranges), ties and saturation at scale
// 1 (values n/4), zero and tiny groups, subnormal floats, NaN/inf in some groups.
std::vector<float> adversarial_keys(std::mt19937_64& rng, std::int64_t T) {
  std::vector<float> k = random_keys(rng, T, 2.0f);
  std::uniform_int_distribution<int> kind(0, 7), q(-28, 28), e(-140, 100);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::int64_t t = 0; t < T; ++t)
    for (int g = 0; g < 8; ++g) {
      float* x = &k[t * kD + 16 * g];
      switch (kind(rng)) {
        case 0:  // ties of the E2M1 midpoints at scale 1: |max| = 6
          for (int j = 0; j < 16; ++j) x[j] = static_cast<float>(q(rng)) * 0.25f;
          x[0] = 6.0f;
          break;
        case 1:
          for (int j = 0; j < 16; ++j) x[j] = 0.0f;
          break;
        case 2:  // any binade, tiny to huge
          for (int j = 0; j < 16; ++j) x[j] = std::ldexp(u(rng), e(rng));
          break;
        case 3:
          x[5] = (t + g) % 3 ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity();
          break;
        case 4:
          for (int j = 0; j < 16; ++j) x[j] = -0.0f;
          x[3] = std::numeric_limits<float>::denorm_min();
          break;
        default:
          break;
      }
    }
  return k;
}

template <class KeyT>
void check_against_generic(std::int64_t T, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::int64_t NB = (T + 127) / 128 + 2;
  std::vector<float> k = adversarial_keys(rng, T);
  Kokkos::View<KeyT**, Kokkos::LayoutRight, Kokkos::HostSpace> keys("keys", T, kD);
  for (std::int64_t t = 0; t < T; ++t)
    for (int d = 0; d < kD; ++d) {
      if constexpr (std::is_same<KeyT, float>::value) keys(t, d) = k[t * kD + d];
      else keys(t, d) = uq::codec::float_to_bf16(k[t * kD + d]);
    }
  Kokkos::View<std::int64_t*, Kokkos::HostSpace> slots("slots", T);
  std::vector<std::int64_t> perm(static_cast<std::size_t>(NB * 128));
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (std::int64_t t = 0; t < T; ++t) slots(t) = t % 11 == 3 ? -1 : t % 13 == 5 ? NB * 128 + t : perm[t];
  using Cache = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Kokkos::HostSpace>;
  Cache generic("generic", NB, kPage), host("host", NB, kPage);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t i = 0; i < generic.size(); ++i) generic.data()[i] = host.data()[i] = static_cast<std::uint8_t>(byte(rng));

  using Exec = Kokkos::DefaultHostExecutionSpace;
  uq::impl::StatusCounters<Exec> cg(Exec{}), ch(Exec{});
  cg.reset(Exec{});
  ch.reset(Exec{});
  using Counts = typename uq::impl::StatusCounters<Exec>::view_type;
  uq::impl::WriteIndexKeysGeneric<Exec, decltype(keys), decltype(slots), Cache, Counts> kernel;
  kernel.keys = keys;
  kernel.slots = slots;
  kernel.cache = generic;
  kernel.counts = cg.view();
  kernel.num_tokens = T;
  kernel.num_slots = NB * 128;
  kernel.chunked = uq::impl::wio::rows_are_chunked(keys);
  kernel.aligned_words = uq::impl::wio::words_are_aligned(generic, 4);
  kernel.launch(Exec{});
  ih::launch<KeyT, std::int64_t>(Exec{}, uq::impl::index_key_write_launch(keys, slots, host, ch.view()));
  Exec{}.fence();
  long diff = 0;
  for (std::size_t i = 0; i < generic.size(); ++i)
    if (generic.data()[i] != host.data()[i] && ++diff <= 5)
      ADD_FAILURE() << "byte " << i << " (page " << i / kPage << ", offset " << i % kPage << "): generic "
                    << int(generic.data()[i]) << ", host " << int(host.data()[i]);
  EXPECT_EQ(diff, 0);
  const uq::Status sg = cg.read(Exec{}), sh = ch.read(Exec{});
  EXPECT_EQ(sg[uq::Counter::nonfinite_inputs], sh[uq::Counter::nonfinite_inputs]);
  EXPECT_EQ(sg[uq::Counter::bad_slots], sh[uq::Counter::bad_slots]);
  if (T >= 100) {  // the inputs reach both counters
    EXPECT_GT(sh[uq::Counter::nonfinite_inputs], 0u);
    EXPECT_GT(sh[uq::Counter::bad_slots], 0u);
  }
}

TEST(IndexWriterHost, KernelMatchesTheGenericKernelBf16) {
  for (std::int64_t T : {1, 7, 300}) check_against_generic<uq::bf16>(T, 100 + T);
}

TEST(IndexWriterHost, KernelMatchesTheGenericKernelFloat) {
  for (std::int64_t T : {1, 7, 300}) check_against_generic<float>(T, 200 + T);
}

}  // namespace

#else
TEST(IndexWriterHost, NotBuilt) { GTEST_SKIP() << "no host vector extensions in this build"; }
#endif
