#include "cli/demo_data.hpp"

#include <cmath>
#include <numeric>

namespace uq {
namespace cli {
namespace demo {
namespace {

// Uniform in [0, 1) from 64 random bits (53 of them).
double uniform(std::uint64_t bits) { return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0); }

// Query construction: each needle pulls the query towards its (centred) key with
// strength pull x weight, pull drawn per query head in [kPullMin, kPullMax];
// kQueryNoise is the per-channel noise. With keys of norm ~20-30, the needles' scores
// stand ~4-15 (in units of the softmax exponent) above a background of spread ~1, so
// heads range from diffuse (thousands of effective tokens over 75k) to peaked (a few).
constexpr float kPullMin = 5.0f;
constexpr float kPullMax = 10.0f;
constexpr float kQueryNoise = 0.3f;
constexpr int kNeedles = 4;

}  // namespace

LayerModel make_layer_model(const DemoShape& shape) {
  LayerModel m;
  m.shape = shape;
  const int n = shape.kv_heads * kDim;
  m.k_scale.resize(n);
  m.k_mean.resize(n);
  m.v_scale.resize(n);
  m.v_mean.resize(n);
  auto normal = [&](std::uint64_t index) { return approx_normal(random_bits(shape.seed, kStreamModel, index)); };
  for (int i = 0; i < n; ++i) {
    m.k_scale[i] = std::exp(0.4f * normal(4 * i + 0));
    m.k_mean[i] = 0.3f * normal(4 * i + 1);
    m.v_scale[i] = std::exp(0.3f * normal(4 * i + 2));
    m.v_mean[i] = 0.05f * normal(4 * i + 3);
  }
  const std::uint64_t base = 4 * static_cast<std::uint64_t>(n);
  for (int h = 0; h < shape.kv_heads; ++h) {
    // Distinct outlier channels of K: magnitude f in [10, 30], one sign per channel.
    std::vector<int> chosen;
    for (std::uint64_t j = 0; static_cast<int>(chosen.size()) < kKeyOutliersPerHead; ++j) {
      const int d = static_cast<int>(random_bits(shape.seed, kStreamModel, base + 64 * h + j) % kDim);
      bool dup = false;
      for (int c : chosen) dup = dup || c == d;
      if (dup) continue;
      chosen.push_back(d);
      const std::uint64_t r = random_bits(shape.seed, kStreamModel, base + 64 * h + 32 + j);
      const float f = static_cast<float>(10.0 + 20.0 * uniform(r));
      const float sign = (r & 1u) ? 1.0f : -1.0f;
      m.k_mean[h * kDim + d] = sign * 0.85f * f;
      m.k_scale[h * kDim + d] = 0.3f * f;
      m.k_outliers.push_back(d);
    }
    // One V channel 5x wider than typical.
    const int dv = static_cast<int>(random_bits(shape.seed, kStreamModel, base + 64 * h + 63) % kDim);
    m.v_scale[h * kDim + dv] *= 5.0f;
  }
  return m;
}

float token_factor(const LayerModel& m, bool is_v, int seq, std::int64_t t, int h) {
  const DemoShape& s = m.shape;
  const std::uint64_t index = (static_cast<std::uint64_t>(seq) * s.context + t) * s.kv_heads + h;
  const float z = approx_normal(random_bits(s.seed, is_v ? kStreamTokenV : kStreamTokenK, index));
  return std::exp((is_v ? m.v_token_spread : m.k_token_spread) * z);
}

void kv_row(const LayerModel& m, bool is_v, int seq, std::int64_t t, int h, float* row) {
  const DemoShape& s = m.shape;
  const float f = token_factor(m, is_v, seq, t, h);
  const std::vector<float>& scale = is_v ? m.v_scale : m.k_scale;
  const std::vector<float>& mean = is_v ? m.v_mean : m.k_mean;
  for (int d = 0; d < kDim; ++d) {
    const float z = approx_normal(
        random_bits(s.seed, kStreamKV, kv_element_index(seq, s.context, t, h, s.kv_heads, is_v ? 1 : 0, d)));
    const float scaled = scale[h * kDim + d] * z;
    row[d] = f * (scaled + mean[h * kDim + d]);
  }
}

void generate_kv(const LayerModel& m, int seq, std::int64_t t0, const DeviceView3<bf16>& k,
                 const DeviceView3<bf16>& v) {
  const DemoShape& s = m.shape;
  const std::int64_t n = static_cast<std::int64_t>(k.extent(0));
  const int heads = s.kv_heads;
  std::vector<float> factors(static_cast<std::size_t>(2 * n * heads));
  for (std::int64_t t = 0; t < n; ++t)
    for (int h = 0; h < heads; ++h) {
      factors[2 * (t * heads + h) + 0] = token_factor(m, false, seq, t0 + t, h);
      factors[2 * (t * heads + h) + 1] = token_factor(m, true, seq, t0 + t, h);
    }
  std::vector<float> tables;
  for (const std::vector<float>* tbl : {&m.k_scale, &m.k_mean, &m.v_scale, &m.v_mean})
    tables.insert(tables.end(), tbl->begin(), tbl->end());
  const auto factors_d = to_device_1d("uq::demo::token_factors", factors);
  const auto tables_d = to_device_1d("uq::demo::channel_tables", tables);

  const std::uint64_t seed = s.seed;
  const std::int64_t context = s.context;
  const std::int64_t table = static_cast<std::int64_t>(heads) * kDim;
  Kokkos::parallel_for(
      "uq::demo::generate_kv", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, n * heads * kDim),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const int d = static_cast<int>(i % kDim);
        const std::int64_t row = i / kDim;
        const int h = static_cast<int>(row % heads);
        const std::int64_t t = row / heads;
        const std::int64_t c = static_cast<std::int64_t>(h) * kDim + d;
        for (int is_v = 0; is_v < 2; ++is_v) {
          const float z = approx_normal(
              random_bits(seed, kStreamKV, kv_element_index(seq, context, t0 + t, h, heads, is_v, d)));
          const float scaled = tables_d(2 * is_v * table + c) * z;
          const float value = factors_d(2 * row + is_v) * (scaled + tables_d((2 * is_v + 1) * table + c));
          (is_v ? v : k)(t, h, d) = codec::float_to_bf16(value);
        }
      });
}

std::vector<std::int64_t> needle_tokens(const LayerModel& m, int seq, int hq) {
  const DemoShape& s = m.shape;
  std::vector<std::int64_t> t = {0};
  for (int j = 1; j < kNeedles; ++j) {
    const std::uint64_t index = (static_cast<std::uint64_t>(seq) * s.q_heads() + hq) * 16 + j;
    t.push_back(static_cast<std::int64_t>(random_bits(s.seed, kStreamQuery, index) % s.context));
  }
  return t;
}

std::vector<bf16> make_queries(const LayerModel& m, int per_seq) {
  const DemoShape& s = m.shape;
  const int hq_count = s.q_heads();
  std::vector<bf16> q(static_cast<std::size_t>(s.seqs) * per_seq * hq_count * kDim);
  std::vector<float> row(kDim), acc(kDim);
  for (int b = 0; b < s.seqs; ++b)
    for (int tok = 0; tok < per_seq; ++tok)
    for (int hq = 0; hq < hq_count; ++hq) {
      const int h = hq / s.qg;
      // The random numbers' key: query token 0's is the one-token demo's (b, hq), later tokens'
      // lie past every sequence's; where the row goes: row b * per_seq + tok of the output.
      const std::uint64_t qrow =
          (static_cast<std::uint64_t>(tok) * s.seqs + static_cast<std::uint64_t>(b)) * hq_count + hq;
      const std::uint64_t out_row = (static_cast<std::uint64_t>(b) * per_seq + tok) * hq_count + hq;
      std::fill(acc.begin(), acc.end(), 0.0f);
      const double head_pull =
          kPullMin + (kPullMax - kPullMin) * uniform(random_bits(s.seed, kStreamQuery, qrow * 16 + 15));
      const std::vector<std::int64_t> needles = needle_tokens(m, b, hq);
      for (std::size_t j = 0; j < needles.size(); ++j) {
        kv_row(m, false, b, needles[j], h, row.data());
        const float f = token_factor(m, false, b, needles[j], h);
        double norm2 = 0;
        for (int d = 0; d < kDim; ++d) {
          row[d] -= f * m.k_mean[h * kDim + d];  // aim at what distinguishes the token
          norm2 += static_cast<double>(row[d]) * row[d];
        }
        // Token 0 is a moderate sink; the others pull with weights in [0.6, 1).
        const double w = j == 0 ? 0.5 : 0.6 + 0.4 * uniform(random_bits(s.seed, kStreamQuery, qrow * 16 + 8 + j));
        const float pull = static_cast<float>(head_pull * w / std::sqrt(norm2 > 0 ? norm2 : 1.0));
        for (int d = 0; d < kDim; ++d) acc[d] += pull * row[d];
      }
      for (int d = 0; d < kDim; ++d) {
        const float z = approx_normal(random_bits(s.seed, kStreamQuery, (1ull << 40) + qrow * kDim + d));
        q[out_row * kDim + d] = codec::float_to_bf16(acc[d] + kQueryNoise * z);
      }
    }
  return q;
}

std::vector<std::int32_t> make_block_tables(const DemoShape& s) {
  const std::int64_t per_seq = s.blocks_per_seq();
  const std::int64_t total = per_seq * s.seqs;
  std::vector<std::int32_t> order(static_cast<std::size_t>(total));
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t i = total - 1; i > 0; --i) {
    const std::int64_t j = static_cast<std::int64_t>(random_bits(s.seed, kStreamBlocks, i) % (i + 1));
    std::swap(order[i], order[j]);
  }
  return order;  // row b = the blocks of sequence b, in token order
}

}  // namespace demo
}  // namespace cli
}  // namespace uq
