#include "cli/demo_check.hpp"

#include "uqref.hpp"

#include <algorithm>
#include <cmath>

namespace uq {
namespace cli {
namespace demo {
namespace {

std::vector<std::uint16_t> bits_of(const bf16* p, std::size_t n) {
  std::vector<std::uint16_t> bits(n);
  for (std::size_t i = 0; i < n; ++i) bits[i] = p[i].bits;
  return bits;
}

// The reference decode of sequence b alone (its block-table row and length): q holds its query
// rows; starts and tokens its query_start_loc {0, tokens}, or nullptr for one query token.
uqref::DecodeResult reference_of_sequence(const CheckInputs& in, int b, const std::vector<std::uint16_t>& q,
                                          const std::int32_t* starts, int tokens) {
  const DemoShape& s = in.model->shape;
  const int mb = s.blocks_per_seq();
  uqref::DecodeInputs di{};
  di.q = q.data();
  di.q_stride_seq = static_cast<std::int64_t>(s.q_heads()) * kDim;
  di.q_stride_head = kDim;
  di.cache = in.cache->data();
  di.num_blocks = in.num_blocks;
  di.block_size = s.block_size;
  di.num_kv_heads = s.kv_heads;
  di.slot_bytes = in.slot_bytes;
  di.block_tables = in.block_tables->data() + static_cast<std::size_t>(b) * mb;
  di.max_blocks_per_seq = mb;
  di.seq_lens = in.seq_lens->data() + b;
  di.num_seqs = 1;
  di.qg = s.qg;
  di.scale = in.scale;
  di.q_rotated = false;
  di.query_start_loc = starts;
  di.num_query_tokens = tokens;
  return uqref::uq_decode(di);
}

// Keeps what the checks read of one sample's reference result (References, MtpReferences).
template <class SampleReferences>
void add_reference(SampleReferences& r, uqref::DecodeResult&& res) {
  r.uq.push_back(std::move(res.out));
  r.vmax.push_back(std::move(res.vmax));
  r.score_abs.push_back(std::move(res.score_abs));
}

// Unquantised attention of one sequence, every query head, in double. Also the
// attention's effective number of tokens (exp of its entropy) and top weight per head.
void bf16_attention(const CheckInputs& in, int sample, std::vector<double>& out, std::vector<double>& effective,
                    std::vector<double>& top) {
  const DemoShape& s = in.model->shape;
  const int b = in.sample[sample];
  const int hq_count = s.q_heads(), heads = s.kv_heads;
  const std::int64_t L = std::min<std::int64_t>((*in.seq_lens)[b], s.context);
  const std::vector<bf16>& K = in.k[sample];
  const std::vector<bf16>& V = in.v[sample];
  // q as double, per head.
  std::vector<double> q(static_cast<std::size_t>(hq_count) * kDim);
  for (int i = 0; i < hq_count * kDim; ++i)
    q[i] = codec::bf16_to_float((*in.q)[static_cast<std::size_t>(b) * hq_count * kDim + i]);
  // Scores, then a max-shifted softmax (two passes over the tokens).
  std::vector<double> scores(static_cast<std::size_t>(L) * hq_count);
  std::vector<double> row(kDim);
  for (std::int64_t t = 0; t < L; ++t)
    for (int h = 0; h < heads; ++h) {
      for (int d = 0; d < kDim; ++d) row[d] = codec::bf16_to_float(K[(t * heads + h) * kDim + d]);
      for (int j = 0; j < s.qg; ++j) {
        const int hq = h * s.qg + j;
        double dot = 0;
        for (int d = 0; d < kDim; ++d) dot += q[hq * kDim + d] * row[d];
        scores[t * hq_count + hq] = in.scale * dot;
      }
    }
  out.assign(static_cast<std::size_t>(hq_count) * kDim, 0.0);
  effective.clear();
  top.clear();
  if (L == 0) return;
  std::vector<double> m(hq_count, -INFINITY), l(hq_count, 0.0);
  for (std::int64_t t = 0; t < L; ++t)
    for (int hq = 0; hq < hq_count; ++hq) m[hq] = std::max(m[hq], scores[t * hq_count + hq]);
  for (std::int64_t t = 0; t < L; ++t)
    for (int hq = 0; hq < hq_count; ++hq) {
      double& w = scores[t * hq_count + hq];
      w = std::exp(w - m[hq]);
      l[hq] += w;
    }
  std::vector<double> entropy(hq_count, 0.0), wmax(hq_count, 0.0);
  for (std::int64_t t = 0; t < L; ++t)
    for (int h = 0; h < heads; ++h) {
      for (int d = 0; d < kDim; ++d) row[d] = codec::bf16_to_float(V[(t * heads + h) * kDim + d]);
      for (int j = 0; j < s.qg; ++j) {
        const int hq = h * s.qg + j;
        const double w = scores[t * hq_count + hq] / l[hq];
        if (w > 0) entropy[hq] -= w * std::log(w);
        wmax[hq] = std::max(wmax[hq], w);
        for (int d = 0; d < kDim; ++d) out[hq * kDim + d] += w * row[d];
      }
    }
  for (int hq = 0; hq < hq_count; ++hq) {
    effective.push_back(std::exp(entropy[hq]));
    top.push_back(wmax[hq]);
  }
}

}  // namespace

double cosine(const double* a, const double* b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0;
  if (aa == 0 || bb == 0) return 0.0;
  return ab / std::sqrt(aa * bb);
}

References compute_references(const CheckInputs& in) {
  const DemoShape& s = in.model->shape;
  const int hq_count = s.q_heads();
  References r;
  std::vector<double> effective, top;
  for (std::size_t i = 0; i < in.sample.size(); ++i) {
    const int b = in.sample[i];
    const std::vector<std::uint16_t> q = bits_of(in.q->data() + static_cast<std::size_t>(b) * hq_count * kDim,
                                                 static_cast<std::size_t>(hq_count) * kDim);
    add_reference(r, reference_of_sequence(in, b, q, nullptr, 0));

    std::vector<double> out, eff, tw;
    bf16_attention(in, static_cast<int>(i), out, eff, tw);
    r.bf16.push_back(std::move(out));
    effective.insert(effective.end(), eff.begin(), eff.end());
    top.insert(top.end(), tw.begin(), tw.end());
  }
  auto med = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  r.effective_tokens_median = med(effective);
  r.top_weight_median = med(top);
  return r;
}

namespace {

// One element against the reference: its error and its error / bound (a NaN error, or a non-zero
// error against a zero bound, counts as a failure).
void add_error(CheckResult& c, double got, double want, double vmax, double score_abs, const DecodeErrorModel& em) {
  const double err = std::fabs(got - want);
  const double bound = decode_error_bound(vmax, score_abs, em);
  c.max_abs_error = std::max(c.max_abs_error, err);
  const double ratio = err == 0 ? 0.0 : (bound > 0 ? err / bound : INFINITY);
  c.max_error_ratio = std::isnan(err) ? INFINITY : std::max(c.max_error_ratio, ratio);
}

}  // namespace

MtpReferences compute_mtp_references(const CheckInputs& in, const std::vector<bf16>& q_mtp, int ql) {
  const DemoShape& s = in.model->shape;
  const int hq_count = s.q_heads();
  const std::size_t rows = static_cast<std::size_t>(ql) * hq_count * kDim;
  MtpReferences r;
  r.ql = ql;
  const std::vector<std::int32_t> starts = {0, ql};
  for (int b : in.sample) {
    const std::vector<std::uint16_t> q = bits_of(q_mtp.data() + static_cast<std::size_t>(b) * rows, rows);
    add_reference(r, reference_of_sequence(in, b, q, starts.data(), ql));
  }
  return r;
}

CheckResult check_mtp_output(const CheckInputs& in, const MtpReferences& ref, const std::vector<bf16>& out,
                             const DecodeErrorModel& error_model) {
  const int hq_count = in.model->shape.q_heads();
  const std::size_t per_seq = static_cast<std::size_t>(ref.ql) * hq_count;  // query rows of a sequence
  CheckResult c;
  for (std::size_t i = 0; i < in.sample.size(); ++i)
    for (std::size_t row = 0; row < per_seq; ++row)
      for (int d = 0; d < kDim; ++d) {
        const std::size_t at = row * kDim + d;
        add_error(c, codec::bf16_to_float(out[(in.sample[i] * per_seq + row) * kDim + d]), ref.uq[i][at],
                  ref.vmax[i][at], ref.score_abs[i][row], error_model);
      }
  return c;
}

CheckResult check_output(const CheckInputs& in, const References& ref, const std::vector<bf16>& out,
                         const DecodeErrorModel& error_model) {
  const DemoShape& s = in.model->shape;
  const int hq_count = s.q_heads();
  CheckResult c;
  double cos_sum = 0, ref_cos_sum = 0;
  int heads = 0;
  std::vector<double> got(kDim);
  for (std::size_t i = 0; i < in.sample.size(); ++i) {
    const int b = in.sample[i];
    for (int hq = 0; hq < hq_count; ++hq) {
      const std::size_t row = (static_cast<std::size_t>(b) * hq_count + hq) * kDim;
      for (int d = 0; d < kDim; ++d) {
        got[d] = codec::bf16_to_float(out[row + d]);
        add_error(c, got[d], ref.uq[i][hq * kDim + d], ref.vmax[i][hq * kDim + d], ref.score_abs[i][hq], error_model);
      }
      const double cs = cosine(got.data(), ref.bf16[i].data() + hq * kDim, kDim);
      const double cr = cosine(ref.uq[i].data() + hq * kDim, ref.bf16[i].data() + hq * kDim, kDim);
      c.min_cosine_bf16 = std::min(c.min_cosine_bf16, cs);
      c.ref_min_cosine_bf16 = std::min(c.ref_min_cosine_bf16, cr);
      cos_sum += cs;
      ref_cos_sum += cr;
      ++heads;
    }
  }
  c.mean_cosine_bf16 = heads ? cos_sum / heads : 1.0;
  c.ref_mean_cosine_bf16 = heads ? ref_cos_sum / heads : 1.0;
  return c;
}

}  // namespace demo
}  // namespace cli
}  // namespace uq
