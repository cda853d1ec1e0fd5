// The uq demo (src/cli/cmd_demo.cpp and its parts): it runs and passes its own checks
// on a small awkward shape; its synthetic data have the features it claims (outlier
// channels, per-token norm variation, non-uniform attention); its checker accepts a
// correct output and rejects a wrong one; its measurements and printing behave.
#include "cli/cli_test_support.hpp"

#include "measure/copy_bandwidth.hpp"
#include "cli/demo_check.hpp"
#include "cli/demo_data.hpp"
#include "cli/progress.hpp"
#include "cli/text_table.hpp"

#include "uqref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

using namespace cli_test;
namespace demo = uq::cli::demo;

namespace {

demo::DemoShape small_shape() {
  demo::DemoShape s;
  s.seqs = 3;
  s.context = 257;
  s.qg = 6;
  s.kv_heads = 2;
  s.block_size = 16;
  s.seed = 77;
  return s;
}

double bf16_float(uq::bf16 h) { return uq::codec::bf16_to_float(h); }

}  // namespace

TEST(CliDemo, RunsOnASmallShapeAndPassesItsChecks) {
  const CliResult r = run({"demo", "--seqs", "3", "--context", "1000", "--qg", "8", "--kv-heads", "2", "--block-size",
                           "32", "--reps", "2", "--check-seqs", "0", "--copy-mib", "8", "--seed", "5"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (const char* words : {"3 sequences x 1000 tokens, 2 KV heads x QG 8 = 16 query heads", "backend", "time (us)",
                            "% of copy", "err / tol", "cos vs bf16", "(default)", "sequences 0, 1, 2, all 16 query heads",
                            // the MTP lines (--query-len 2 by default): checked, and the same bits as two calls
                            "generic MTP QL=2", "generic 2 x 1-token", "(the same bits)"})
    EXPECT_NE(r.out.find(words), std::string::npos) << words << "\n" << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  // Not a terminal: one final line per step, no redrawing.
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  EXPECT_NE(r.err.find("generating K/V and writing the cache (uq::write_kv): 3000 tokens x 2 KV heads"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("measuring the copy bandwidth"), std::string::npos);
}

TEST(CliDemo, DefaultsAreTheHeadlineShape) {
  const CliResult help = run({"demo", "--help"});
  for (const char* words : {"--seqs N", "(default 4)", "(default 75000)", "--qg G", "(default 6)", "--kv-heads H",
                            "(default 1)", "--block-size BS", "(default 64)", "81.6 MB", "--query-len QL", "(default 2)"})
    EXPECT_NE(help.out.find(words), std::string::npos) << words;
  // 4 x 75000 tokens x 1 head x 272 bytes is the 81.6 MB quoted by the original kernel.
  EXPECT_EQ(4.0 * 75000 * 272, 81.6e6);
}

TEST(CliDemo, KeysHaveOutlierChannelsAndTokensVaryInNorm) {
  const demo::DemoShape s = small_shape();
  const demo::LayerModel m = demo::make_layer_model(s);
  ASSERT_EQ(m.k_outliers.size(), std::size_t(s.kv_heads) * demo::kKeyOutliersPerHead);
  std::vector<float> row(demo::kDim);
  for (int h = 0; h < s.kv_heads; ++h) {
    // Mean |k| per channel over 200 tokens.
    std::vector<double> mag(demo::kDim, 0.0);
    std::vector<double> norms;
    for (int t = 0; t < 200; ++t) {
      demo::kv_row(m, false, 1, t, h, row.data());
      for (int d = 0; d < demo::kDim; ++d) mag[d] += std::fabs(row[d]) / 200;
      demo::kv_row(m, true, 1, t, h, row.data());
      double n2 = 0;
      for (float x : row) n2 += double(x) * x;
      norms.push_back(std::sqrt(n2));
    }
    std::vector<double> sorted = mag;
    std::sort(sorted.begin(), sorted.end());
    const double typical = sorted[demo::kDim / 2];
    std::set<int> outliers(m.k_outliers.begin() + h * demo::kKeyOutliersPerHead,
                           m.k_outliers.begin() + (h + 1) * demo::kKeyOutliersPerHead);
    EXPECT_EQ(outliers.size(), std::size_t(demo::kKeyOutliersPerHead)) << "distinct channels";
    for (int d : outliers) {
      EXPECT_GT(mag[d] / typical, 8.0) << "head " << h << " channel " << d;
      EXPECT_LT(mag[d] / typical, 40.0) << "head " << h << " channel " << d;
    }
    // The largest channels are exactly the outliers.
    EXPECT_LT(sorted[demo::kDim - 1 - demo::kKeyOutliersPerHead] / typical, 8.0);
    const double mean = std::accumulate(norms.begin(), norms.end(), 0.0) / norms.size();
    double var = 0;
    for (double n : norms) var += (n - mean) * (n - mean) / norms.size();
    EXPECT_GT(std::sqrt(var) / mean, 0.1) << "per-token norm variation";
  }
}

TEST(CliDemo, DeviceGenerationMatchesTheHostDefinition) {
  const demo::DemoShape s = small_shape();
  const demo::LayerModel m = demo::make_layer_model(s);
  const std::int64_t t0 = 100, n = 37;
  uq::cli::DeviceView3<uq::bf16> k("k", n, s.kv_heads, demo::kDim), v("v", n, s.kv_heads, demo::kDim);
  demo::generate_kv(m, 2, t0, k, v);
  const std::vector<uq::bf16> kh = uq::cli::to_host(k), vh = uq::cli::to_host(v);
  std::vector<float> row(demo::kDim);
  int differing = 0;
  for (std::int64_t t = 0; t < n; ++t)
    for (int h = 0; h < s.kv_heads; ++h)
      for (int is_v = 0; is_v < 2; ++is_v) {
        demo::kv_row(m, is_v == 1, 2, t0 + t, h, row.data());
        for (int d = 0; d < demo::kDim; ++d) {
          const std::uint16_t want = uqref::bf16_round(row[d]);
          const std::uint16_t got = (is_v ? vh : kh)[(t * s.kv_heads + h) * demo::kDim + d].bits;
          // A device may contract a multiply-add (one rounding less): at most 1 bf16 ulp.
          ASSERT_LE(std::abs(int(got) - int(want)), 1) << "t " << t << " h " << h << " d " << d;
          differing += got != want;
        }
      }
  if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, uq::cli::DeviceMemory>::accessible) {
    EXPECT_EQ(differing, 0);
  }
}

TEST(CliDemo, BlockTablesScatterEveryBlockOnce) {
  demo::DemoShape s = small_shape();
  const std::vector<std::int32_t> t = demo::make_block_tables(s);
  ASSERT_EQ(t.size(), std::size_t(s.seqs) * s.blocks_per_seq());
  std::vector<std::int32_t> sorted = t;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], static_cast<std::int32_t>(i));
  int in_place = 0;
  for (std::size_t i = 0; i < t.size(); ++i) in_place += t[i] == static_cast<std::int32_t>(i);
  EXPECT_LT(in_place, static_cast<int>(t.size()) / 4) << "blocks are scattered, not in order";
  EXPECT_EQ(demo::make_block_tables(s), t) << "deterministic";
}

// A cache of the demo's data written by the reference writer, the demo's checks run on
// it: the reference's own output passes, a perturbed one fails, attention is peaked.
TEST(CliDemo, CheckerAcceptsCorrectOutputsAndRejectsWrongOnes) {
  demo::DemoShape s = small_shape();
  s.context = 3000;
  const demo::LayerModel m = demo::make_layer_model(s);
  const std::vector<std::int32_t> tables = demo::make_block_tables(s);
  const std::vector<std::int32_t> lens(s.seqs, s.context);
  const std::vector<uq::bf16> q = demo::make_queries(m);
  const std::int64_t mb = s.blocks_per_seq(), nb = mb * s.seqs;
  std::vector<std::uint8_t> cache(std::size_t(nb) * s.block_size * s.kv_heads * 272, 0);
  demo::CheckInputs in;
  in.model = &m;
  in.q = &q;
  in.cache = &cache;
  in.num_blocks = nb;
  in.block_tables = &tables;
  in.seq_lens = &lens;
  in.sample = {0, 2};
  const int hd = s.kv_heads * demo::kDim;
  std::vector<float> row(demo::kDim);
  for (std::size_t i = 0; i < in.sample.size(); ++i) {
    const int b = in.sample[i];
    std::vector<std::uint16_t> kb(std::size_t(s.context) * hd), vb(kb.size());
    for (int t = 0; t < s.context; ++t)
      for (int h = 0; h < s.kv_heads; ++h) {
        demo::kv_row(m, false, b, t, h, row.data());
        for (int d = 0; d < demo::kDim; ++d) kb[t * hd + h * demo::kDim + d] = uqref::bf16_round(row[d]);
        demo::kv_row(m, true, b, t, h, row.data());
        for (int d = 0; d < demo::kDim; ++d) vb[t * hd + h * demo::kDim + d] = uqref::bf16_round(row[d]);
      }
    std::vector<std::int64_t> slots(s.context);
    for (int t = 0; t < s.context; ++t)
      slots[t] = std::int64_t(tables[b * mb + t / s.block_size]) * s.block_size + t % s.block_size;
    uqref::uq_write_kv(kb.data(), vb.data(), slots.data(), s.context, s.kv_heads, cache.data(), nb, s.block_size, 272);
    in.k.emplace_back(kb.size());
    in.v.emplace_back(vb.size());
    for (std::size_t j = 0; j < kb.size(); ++j) {
      in.k.back()[j].bits = kb[j];
      in.v.back()[j].bits = vb[j];
    }
  }
  const demo::References refs = demo::compute_references(in);
  // Attention is far from uniform (1/3000) but not a single token either.
  EXPECT_GT(refs.top_weight_median, 30.0 / s.context);
  EXPECT_LT(refs.effective_tokens_median, s.context / 3.0);
  EXPECT_GT(refs.effective_tokens_median, 1.5);

  // The reference rounded to bf16 (what a perfect kernel would return) passes.
  std::vector<uq::bf16> out(std::size_t(s.seqs) * s.q_heads() * demo::kDim, uq::bf16{0x7fc0});
  for (std::size_t i = 0; i < in.sample.size(); ++i)
    for (int j = 0; j < s.q_heads() * demo::kDim; ++j)
      out[std::size_t(in.sample[i]) * s.q_heads() * demo::kDim + j].bits = uqref::bf16_round(float(refs.uq[i][j]));
  uq::cli::DecodeErrorModel em;
  em.partitions = 32;
  const demo::CheckResult good = demo::check_output(in, refs, out, em);
  EXPECT_TRUE(good.ok()) << good.max_error_ratio;
  EXPECT_LE(good.max_error_ratio, 0.5);  // one rounding of at most u_b vmax of 3 u_b vmax
  EXPECT_GT(good.min_cosine_bf16, 0.5);
  EXPECT_LE(good.min_cosine_bf16, good.mean_cosine_bf16);
  EXPECT_LT(good.mean_cosine_bf16, 1.0) << "the 4-bit cache is not lossless";

  // One element off by 5% of its row's largest |v|: caught.
  std::vector<uq::bf16> bad = out;
  const std::size_t at = std::size_t(in.sample[1]) * s.q_heads() * demo::kDim + 3 * demo::kDim + 100;
  bad[at] = uq::codec::float_to_bf16(float(bf16_float(out[at]) + 0.05 * refs.vmax[1][3 * demo::kDim + 100]));
  EXPECT_FALSE(demo::check_output(in, refs, bad, em).ok());
  bad[at] = uq::bf16{0x7fc0};  // NaN
  EXPECT_FALSE(demo::check_output(in, refs, bad, em).ok());
}

TEST(CliDemo, CosineOfKnownVectors) {
  const double a[3] = {1, 2, 3}, b[3] = {2, 4, 6}, c[3] = {-3, 0, 1}, z[3] = {0, 0, 0};
  EXPECT_NEAR(demo::cosine(a, b, 3), 1.0, 1e-15);
  EXPECT_NEAR(demo::cosine(a, c, 3), 0.0, 1e-15);
  EXPECT_EQ(demo::cosine(z, z, 3), 1.0);
  EXPECT_EQ(demo::cosine(a, z, 3), 0.0);
}

TEST(CliDemo, CopyBandwidthIsMeasured) {
  const uq::measure::CopyBandwidth bw = uq::measure::measure_copy_bandwidth(std::size_t(8) << 20, 3, 1.0);
  EXPECT_EQ(bw.buffer_bytes, std::size_t(8) << 20);
  EXPECT_GE(bw.repetitions, 2);
  EXPECT_GT(bw.seconds, 0.0);
  EXPECT_TRUE(std::isfinite(bw.gb_per_s));
  EXPECT_GT(bw.gb_per_s, 0.01);
  std::string note;
  const std::size_t auto_bytes = uq::measure::default_copy_buffer_bytes(&note);
  EXPECT_GE(auto_bytes, std::size_t(256) << 20);
  EXPECT_LE(auto_bytes, std::size_t(1) << 30);
  EXPECT_FALSE(note.empty());
}

TEST(CliDemo, TableAndProgressPrinting) {
  uq::cli::TextTable t({"backend", "time (µs)", "x"});
  t.add_row({"generic (default)", "12.5", "ok"});
  t.add_row({"sm90", "1", ""});
  EXPECT_EQ(t.render(),
            "backend            time (µs)  x\n"
            "--------------------------------\n"
            "generic (default)  12.5       ok\n"
            "sm90               1          \n");
  std::ostringstream quiet, tty;
  {
    uq::cli::Progress p(quiet, false, "step", 10);
    p.update(5);
    p.finish("done");
  }
  EXPECT_EQ(quiet.str().rfind("  step: done (", 0), 0u);
  EXPECT_EQ(quiet.str().find('\r'), std::string::npos);
  {
    uq::cli::Progress p(tty, true, "step", 10);
    p.finish("done");
  }
  EXPECT_NE(tty.str().find("\r\033[K  step  0%"), std::string::npos) << tty.str();
  EXPECT_NE(tty.str().find("step: done"), std::string::npos);
}
