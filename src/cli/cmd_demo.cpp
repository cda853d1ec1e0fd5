// uq demo: the whole pipeline on a realistic layer. Generates K/V/Q (demo_data.hpp),
// writes the cache with uq::write_kv, decodes with every available backend, checks a
// sample of sequences against the float64 reference and unquantised attention
// (demo_check.hpp), times each backend next to the copy bandwidth measured in the same
// run, and prints a table.
#include "cli/commands.hpp"
#include "measure/copy_bandwidth.hpp"
#include "cli/demo_check.hpp"
#include "cli/demo_data.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/progress.hpp"
#include "cli/text_table.hpp"
#include "measure/timing.hpp"

#include "uq/decode.hpp"
#include "uq/write_kv.hpp"

#include <algorithm>
#include <limits>
#include <ostream>

namespace uq {
namespace cli {
namespace {

using demo::DemoShape;
using measure::CopyBandwidth;
using measure::default_copy_buffer_bytes;
using measure::measure_copy_bandwidth;
using measure::median;
using measure::time_repeatedly;
using measure::TimingRule;
using demo::kDim;

constexpr int kSlotBytes = 272;
constexpr std::int64_t kChunkTokens = 8192;  // tokens generated and written per step
constexpr double kTimingBudgetSeconds = 8.0;

// The sequences checked: n of them spread evenly (first and last included); all if n == 0.
std::vector<int> sample_sequences(int seqs, int n) {
  if (n <= 0 || n >= seqs) {
    std::vector<int> all(seqs);
    for (int b = 0; b < seqs; ++b) all[b] = b;
    return all;
  }
  std::vector<int> s;
  for (int i = 0; i < n; ++i) {
    const int b = n == 1 ? 0 : static_cast<int>(static_cast<std::int64_t>(i) * (seqs - 1) / (n - 1));
    if (s.empty() || s.back() != b) s.push_back(b);
  }
  return s;
}

std::string megabytes(double bytes) {
  return bytes >= 1e9 ? format("%.2f GB", bytes / 1e9)
                      : bytes >= 1e6 ? format("%.1f MB", bytes / 1e6) : format("%.1f kB", bytes / 1e3);
}

struct BackendRun {
  Path path = Path::Generic;
  std::string device;
  int partitions = 0, tgpp = 0;
  double seconds = 0;  // median of the timed runs
  int repetitions = 0;
  Status status;
  std::vector<bf16> out;
};

// Decodes once (the output that is checked), then times repeated runs.
template <class Q, class C, class T, class L, class O>
BackendRun run_backend(const DecodeShape& shape, Backend backend, int reps, const Q& q, const C& cache,
                       const T& tables, const L& lens, const O& out, CommandIo& io) {
  const Exec exec;
  DecodeConfig cfg;
  cfg.backend = backend;
  cfg.check = false;  // the counters are read once below, not after every timed run
  const DecodePlan<Exec> plan(exec, shape, cfg);
  BackendRun r;
  r.path = plan.path();
  r.device = plan.device().name;
  r.partitions = plan.partitions();
  r.tgpp = plan.tile_groups_per_partition();

  Progress progress(io.err, io.interactive, std::string("decoding with the ") + path_name(r.path) + " path", reps + 1);
  Kokkos::deep_copy(out, bf16{0x7fc0});  // poison: NaN wherever the decode did not write
  plan.run(q, cache, tables, lens, out);
  exec.fence();
  r.status = plan.status();
  r.out = to_host(out);
  TimingRule rule;
  rule.min_reps = reps;
  rule.budget_seconds = kTimingBudgetSeconds;
  const std::vector<double> times = time_repeatedly(
      [&] {
        plan.run(q, cache, tables, lens, out);
        exec.fence();
      },
      rule, [&](int n) { progress.update(n + 1); });
  r.seconds = median(times);
  r.repetitions = static_cast<int>(times.size());
  progress.finish(format("%.1f us per call, median of %d (P = %d, TGPP = %d)", r.seconds * 1e6, r.repetitions,
                         r.partitions, r.tgpp));
  return r;
}

// Several query tokens per sequence (spec ultraquant.md §5.9), as a speculative-decoding
// verification: each sequence's last QL tokens are its new ones. One multi-token call against
// today's way, QL one-token calls with seq_len = L - QL + j + 1, both on the generic path (whose
// rows must then be the same bits), each decoded once (the checked output) and timed.
struct MtpRun {
  int ql = 0;
  std::string device;
  int partitions = 0, tgpp = 0;
  double seconds = 0, separate_seconds = 0;  // medians: the one call, the QL one-token calls
  Status status;
  std::vector<bf16> out;  // [seqs * QL, Hq, 256]
  bool same_bits = false;  // as the QL one-token calls
};

MtpRun run_mtp(const DecodeShape& one_token, int ql, int reps, const DeviceView3<const bf16>& q,
               const DeviceView4<const std::uint8_t>& cache, const DeviceView2<const std::int32_t>& tables,
               const std::vector<std::int32_t>& lens, CommandIo& io) {
  const Exec exec;
  const int B = one_token.max_seqs, Hq = one_token.num_kv_heads * one_token.qg;
  DecodeConfig cfg;
  cfg.backend = Backend::Generic;
  cfg.check = false;  // the counters are read once below, not after every timed run
  const DecodePlan<Exec> separate(exec, one_token, cfg);
  DecodeShape shape = one_token;
  shape.max_query_len = ql;
  cfg.query_len = ql;
  const DecodePlan<Exec> plan(exec, shape, cfg);
  MtpRun r;
  r.ql = ql;
  r.device = plan.device().name;
  r.partitions = plan.partitions();
  r.tgpp = plan.tile_groups_per_partition();

  // Today's way: query token j of every sequence in its own call, over lengths L - QL + j + 1.
  using Rows4 = Kokkos::View<const bf16****, Kokkos::LayoutRight, DeviceMemory, Kokkos::MemoryUnmanaged>;
  const Rows4 q4(q.data(), B, ql, Hq, kDim);
  std::vector<DeviceView1<const std::int32_t>> lens_j;
  for (int j = 0; j < ql; ++j) {
    std::vector<std::int32_t> l(lens);
    for (std::int32_t& x : l) x = std::max(x - ql + j + 1, 0);
    lens_j.push_back(to_device_1d("uq::demo::seq_lens_j", l));
  }
  DeviceView3<bf16> out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::demo::mtp_out"), B * ql, Hq, kDim);
  DeviceView3<bf16> out_sep(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::demo::mtp_separate"), B * ql, Hq, kDim);
  const Kokkos::View<bf16****, Kokkos::LayoutRight, DeviceMemory, Kokkos::MemoryUnmanaged> sep4(out_sep.data(), B, ql,
                                                                                               Hq, kDim);
  const DeviceView1<const std::int32_t> lens_d = to_device_1d("uq::demo::seq_lens", lens);
  const auto one_call = [&] { plan.run(q, cache, tables, lens_d, out); };
  const auto separate_calls = [&] {
    for (int j = 0; j < ql; ++j)
      separate.run(Kokkos::subview(q4, Kokkos::ALL, j, Kokkos::ALL, Kokkos::ALL), cache, tables, lens_j[j],
                   Kokkos::subview(sep4, Kokkos::ALL, j, Kokkos::ALL, Kokkos::ALL));
  };

  Progress progress(io.err, io.interactive,
                    format("decoding %d query tokens per sequence (MTP), one call and %d one-token calls", ql, ql),
                    2 * (reps + 1));
  Kokkos::deep_copy(out, bf16{0x7fc0});  // poison: NaN wherever the decode did not write
  Kokkos::deep_copy(out_sep, bf16{0x7fc1});
  one_call();
  separate_calls();
  exec.fence();
  r.status = plan.status();
  r.out = to_host(out);
  const std::vector<bf16> sep = to_host(out_sep);
  r.same_bits = sep.size() == r.out.size() &&
                std::equal(sep.begin(), sep.end(), r.out.begin(), [](bf16 a, bf16 b) { return a.bits == b.bits; });
  TimingRule rule;
  rule.min_reps = reps;
  rule.budget_seconds = kTimingBudgetSeconds / 2;
  int done = 1;
  r.seconds = median(time_repeatedly(
      [&] {
        one_call();
        exec.fence();
      },
      rule, [&](int) { progress.update(++done); }));
  r.separate_seconds = median(time_repeatedly(
      [&] {
        separate_calls();
        exec.fence();
      },
      rule, [&](int) { progress.update(++done); }));
  progress.finish(format("%.1f us per call, %.1f us for %d one-token calls (P = %d, TGPP = %d)", r.seconds * 1e6,
                         r.separate_seconds * 1e6, ql, r.partitions, r.tgpp));
  return r;
}

void run_demo(const ParsedOptions& o, CommandIo& io) {
  DemoShape s;
  s.seqs = static_cast<int>(o.integer("--seqs"));
  s.context = static_cast<int>(o.integer("--context"));
  s.qg = static_cast<int>(o.integer("--qg"));
  s.kv_heads = static_cast<int>(o.integer("--kv-heads"));
  s.block_size = static_cast<int>(o.integer("--block-size"));
  s.seed = static_cast<std::uint64_t>(o.integer("--seed"));
  const int reps = static_cast<int>(o.integer("--reps"));
  const int ql = static_cast<int>(o.integer("--query-len"));
  if (ql == 1) throw UsageError("option --query-len: expected 0 (no MTP line) or 2..16, found 1");
  if (s.qg != 6 && s.qg != 8 && s.qg != 16) throw UsageError("option --qg: expected 6, 8 or 16, found " + std::to_string(s.qg));
  if (!valid_block_size(s.block_size))
    throw UsageError("option --block-size: expected 16, 32, 64, 128 or 256, found " + std::to_string(s.block_size));
  const std::int64_t mb = s.blocks_per_seq();
  const std::int64_t num_blocks = mb * s.seqs;
  if (num_blocks > std::numeric_limits<std::int32_t>::max())
    throw UsageError("--seqs x --context / --block-size: expected fewer than 2^31 blocks, found " +
                     std::to_string(num_blocks));
  const double cache_bytes = static_cast<double>(s.seqs) * s.context * s.kv_heads * kSlotBytes;
  const double table_bytes = static_cast<double>(s.seqs) * mb * sizeof(std::int32_t);
  const bool headline = s.seqs == 4 && s.context == 75000 && s.qg == 6 && s.kv_heads == 1 && s.block_size == 64;

  std::ostream& out = io.out;
  out << "uq demo: " << (headline ? "a Qwen3.6-27B full-attention layer on one rank (synthetic data)"
                                  : "a synthetic attention layer")
      << "\n  " << s.seqs << " sequences x " << s.context << " tokens, " << s.kv_heads << " KV head"
      << (s.kv_heads > 1 ? "s" : "") << " x QG " << s.qg << " = " << s.q_heads()
      << " query heads, head dim 256, block " << s.block_size << ", seed " << s.seed << "\n  cache "
      << megabytes(cache_bytes) << " (272 B per token and KV head) in " << num_blocks
      << " scattered blocks; block table " << megabytes(table_bytes) << "\n"
      << std::flush;

  // ---- data and cache
  const demo::LayerModel model = demo::make_layer_model(s);
  const std::vector<std::int32_t> tables = demo::make_block_tables(s);
  const std::vector<std::int32_t> lens(s.seqs, s.context);
  const std::vector<bf16> q = demo::make_queries(model);
  const std::vector<int> sample = sample_sequences(s.seqs, static_cast<int>(o.integer("--check-seqs")));

  const Exec exec;
  DeviceView4<std::uint8_t> cache_d("uq::demo::cache", num_blocks, s.block_size, s.kv_heads, kSlotBytes);
  demo::CheckInputs check;
  check.k.resize(sample.size());
  check.v.resize(sample.size());
  {
    const std::int64_t total = static_cast<std::int64_t>(s.seqs) * s.context;
    Progress progress(io.err, io.interactive, "generating K/V and writing the cache (uq::write_kv)", total);
    const KvWriter<Exec> writer(exec);  // check = true: a bad slot or non-finite value throws
    std::int64_t done = 0;
    for (int b = 0; b < s.seqs; ++b) {
      const auto in_sample = std::find(sample.begin(), sample.end(), b);
      const std::size_t si = static_cast<std::size_t>(in_sample - sample.begin());
      const std::size_t row = static_cast<std::size_t>(s.kv_heads) * kDim;
      if (in_sample != sample.end()) {
        check.k[si].resize(static_cast<std::size_t>(s.context) * row);
        check.v[si].resize(static_cast<std::size_t>(s.context) * row);
      }
      for (std::int64_t t0 = 0; t0 < s.context; t0 += kChunkTokens) {
        const std::int64_t n = std::min<std::int64_t>(kChunkTokens, s.context - t0);
        DeviceView3<bf16> k_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::demo::k"), n, s.kv_heads, kDim);
        DeviceView3<bf16> v_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::demo::v"), n, s.kv_heads, kDim);
        demo::generate_kv(model, b, t0, k_d, v_d);
        std::vector<std::int64_t> slots(static_cast<std::size_t>(n));
        for (std::int64_t t = 0; t < n; ++t) {
          const std::int64_t tok = t0 + t;
          slots[t] = static_cast<std::int64_t>(tables[b * mb + tok / s.block_size]) * s.block_size + tok % s.block_size;
        }
        writer.run(k_d, v_d, to_device_1d("uq::demo::slots", slots), cache_d);
        if (in_sample != sample.end()) {
          const std::vector<bf16> kh = to_host(k_d), vh = to_host(v_d);
          std::copy(kh.begin(), kh.end(), check.k[si].begin() + t0 * row);
          std::copy(vh.begin(), vh.end(), check.v[si].begin() + t0 * row);
        }
        done += n;
        progress.update(done);
      }
    }
    exec.fence();
    progress.finish(format("%lld tokens x %d KV heads", static_cast<long long>(done), s.kv_heads));
  }

  // ---- copy bandwidth, measured in this run on the same execution space
  CopyBandwidth copy;
  {
    std::string note;
    std::size_t bytes = default_copy_buffer_bytes(&note);
    if (o.integer("--copy-mib") > 0) {
      bytes = static_cast<std::size_t>(o.integer("--copy-mib")) << 20;
      note = "set by --copy-mib";
    }
    Progress progress(io.err, io.interactive, "measuring the copy bandwidth");
    copy = measure_copy_bandwidth(bytes);
    copy.cache_note = note;
    progress.finish(format("%.1f GB/s (2 x %zu MiB buffers, %s; median of %d)", copy.gb_per_s,
                           copy.buffer_bytes >> 20, note.c_str(), copy.repetitions));
  }

  // ---- decode with the default backend, and with each path this device has
  const DeviceView3<const bf16> q_d = to_device_3d("uq::demo::q", q.data(), s.seqs, s.q_heads(), kDim);
  const DeviceView2<const std::int32_t> tables_d = to_device_2d("uq::demo::block_tables", tables.data(), s.seqs, mb);
  const DeviceView1<const std::int32_t> lens_d = to_device_1d("uq::demo::seq_lens", lens);
  const DeviceView4<const std::uint8_t> cache_c = cache_d;
  DeviceView3<bf16> out_d("uq::demo::out", s.seqs, s.q_heads(), kDim);
  DecodeShape shape;
  shape.max_seqs = s.seqs;
  shape.num_kv_heads = s.kv_heads;
  shape.qg = s.qg;
  shape.block_size = s.block_size;
  shape.max_blocks_per_seq = static_cast<int>(mb);
  const Path default_path = DecodePlan<Exec>(exec, shape).path();
  std::vector<BackendRun> runs;
  runs.push_back(run_backend(shape, Backend::Generic, reps, q_d, cache_c, tables_d, lens_d, out_d, io));
  if (default_path != Path::Generic)
    runs.push_back(run_backend(shape, Backend::Native, reps, q_d, cache_c, tables_d, lens_d, out_d, io));
  MtpRun mtp;
  std::vector<bf16> q_mtp;
  if (ql > 1) {
    q_mtp = demo::make_queries(model, ql);
    mtp = run_mtp(shape, ql, reps, to_device_3d("uq::demo::q_mtp", q_mtp.data(), s.seqs * ql, s.q_heads(), kDim),
                  cache_c, tables_d, lens, io);
  }

  // ---- accuracy
  const std::vector<std::uint8_t> cache_host = to_host(cache_d);
  check.model = &model;
  check.q = &q;
  check.cache = &cache_host;
  check.num_blocks = num_blocks;
  check.slot_bytes = kSlotBytes;
  check.block_tables = &tables;
  check.seq_lens = &lens;
  check.scale = DecodeConfig{}.softmax_scale;
  check.sample = sample;
  demo::References refs;
  demo::MtpReferences mtp_refs;
  {
    Progress progress(io.err, io.interactive, "float64 reference (uqref) and unquantised attention");
    refs = demo::compute_references(check);
    if (ql > 1) mtp_refs = demo::compute_mtp_references(check, q_mtp, ql);
    progress.finish(std::to_string(sample.size()) + " sequences x " + std::to_string(s.q_heads()) + " heads" +
                    (ql > 1 ? " (and " + std::to_string(ql) + " query tokens each)" : std::string()));
  }

  const double bytes = cache_bytes + table_bytes;
  TextTable table({"backend", "device", "time (us)", "GB/s", "% of copy", "max |err|", "err / tol", "cos vs bf16 (mean/min)",
                   "status"});
  bool all_ok = true;
  demo::CheckResult first;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const BackendRun& r = runs[i];
    DecodeErrorModel em;
    em.tokens_per_partition = static_cast<double>(r.tgpp) * 256.0;
    em.partitions = r.partitions;
    const demo::CheckResult c = demo::check_output(check, refs, r.out, em);
    if (i == 0) first = c;
    const bool ok = c.ok() && r.status.ok();
    all_ok = all_ok && ok;
    const double gbs = bytes / r.seconds / 1e9;
    table.add_row({std::string(path_name(r.path)) + (r.path == default_path ? " (default)" : ""), r.device,
                   format("%.1f", r.seconds * 1e6), format("%.2f", gbs), format("%.1f%%", 100.0 * gbs / copy.gb_per_s),
                   format("%.2e", c.max_abs_error), format("%.3f", c.max_error_ratio),
                   format("%.4f/%.4f", c.mean_cosine_bf16, c.min_cosine_bf16), r.status.describe() + (ok ? "" : " FAIL")});
  }
  if (ql > 1) {
    DecodeErrorModel em;
    em.tokens_per_partition = static_cast<double>(mtp.tgpp) * 256.0;
    em.partitions = mtp.partitions;
    const demo::CheckResult c = demo::check_mtp_output(check, mtp_refs, mtp.out, em);
    const bool ok = c.ok() && mtp.status.ok() && mtp.same_bits;
    all_ok = all_ok && ok;
    const std::string status = mtp.status.describe() + (mtp.same_bits ? "" : ", bits differ") + (ok ? "" : " FAIL");
    const auto row = [&](const std::string& name, double seconds) {
      const double gbs = bytes / seconds / 1e9;
      table.add_row({name, mtp.device, format("%.1f", seconds * 1e6), format("%.2f", gbs),
                     format("%.1f%%", 100.0 * gbs / copy.gb_per_s), format("%.2e", c.max_abs_error),
                     format("%.3f", c.max_error_ratio), "-", status});
    };
    row(format("generic MTP QL=%d", ql), mtp.seconds);
    row(format("generic %d x 1-token", ql), mtp.separate_seconds);
  }
  std::string checked;
  for (int b : sample) checked += (checked.empty() ? "" : ", ") + std::to_string(b);
  out << "\n" << table.render() << "\n"
      << "  time: median of the timed calls after an untimed one; GB/s: cache + block table ("
      << megabytes(bytes) << ") per call\n"
      << "  % of copy: of " << format("%.1f", copy.gb_per_s)
      << " GB/s measured in this run (a Kokkos copy kernel, read + write, 2 x " << (copy.buffer_bytes >> 20)
      << " MiB)\n"
      << "  max |err|, err / tol: vs the float64 reference (reference/) on sequence"
      << (sample.size() > 1 ? "s " : " ") << checked << ", all " << s.q_heads()
      << " query heads;\n    tol per element as derived in src/cli/decode_tolerance.hpp (3 bf16 roundings + fp32 terms)\n"
      << "  cos vs bf16: per head vs attention on the unquantised bf16 K/V, mean/worst; the float64\n"
      << "    reference on the same 4-bit cache gives "
      << format("%.4f/%.4f", first.ref_mean_cosine_bf16, first.ref_min_cosine_bf16)
      << ": the format's own loss, largest on peaked heads\n"
      << (ql > 1 ? format("  MTP QL=%d: each sequence's last %d tokens as new query tokens (a draft verification,\n"
                         "    spec ultraquant.md section 5.9), one call: %.2fx the time of the one-token call above,\n"
                         "    %.2fx that of today's way, %d one-token calls with seq_len L - %d + j + 1 (%s bits)\n",
                         ql, ql, mtp.seconds / runs[0].seconds, mtp.seconds / mtp.separate_seconds, ql, ql,
                         mtp.same_bits ? "the same" : "NOT the same")
                  : std::string())
      << "  attention: median " << format("%.0f", refs.effective_tokens_median)
      << " effective tokens per head (exp entropy) of " << s.context << "; median top weight "
      << format("%.3f", refs.top_weight_median) << "\n";
  if (default_path == Path::Generic)
    out << "  no tuned kernel for this device in this build: only the generic path ran\n";
  if (!all_ok) throw CheckFailure("FAILED: an output is outside its error bound or the device reported bad data");
}

}  // namespace

Command demo_command() {
  Command c("demo", "the whole pipeline on a realistic layer, checked and timed", run_demo);
  c.usage =
      "demo [--seqs N] [--context T] [--qg G] [--kv-heads H]\n"
      "               [--block-size BS] [--seed S] [--reps R] [--check-seqs N]\n"
      "               [--copy-mib M] [--query-len QL]";
  c.description =
      "Builds keys, values and queries for one attention layer with a realistic distribution (outlier "
      "channels in K, per-token norm variation, queries aimed at a few tokens), writes the cache with "
      "uq::write_kv, decodes with the default backend (and times the generic and the native path where "
      "the device has one), checks a sample of sequences against the float64 reference and against "
      "attention on the unquantised bf16 K/V, and prints a table: backend, device, time, GB/s, % of "
      "the copy bandwidth measured in the same run, errors and status. The MTP lines decode each "
      "sequence's last QL tokens as new query tokens (a speculative-decoding verification) in one call "
      "and, as engines do today, in QL one-token calls, on the generic path: checked against the float64 "
      "reference, and against each other bit for bit.\n\n"
      "The defaults are the original kernel's headline shape: a Qwen3.6-27B full-attention layer on one "
      "rank, QG 6, one KV head, 4 sequences x 75k tokens (81.6 MB of cache), block 64.\n\n"
      "Exit status 1 if an output is outside its error bound or the device reported bad data.";
  c.options = {
      int_option("--seqs", "N", "Sequences.", 1, 1 << 16, "4"),
      int_option("--context", "T", "Tokens per sequence.", 1, 1 << 24, "75000"),
      int_option("--qg", "G", "Query heads per KV head: 6, 8 or 16.", 1, 64, "6"),
      int_option("--kv-heads", "H", "KV heads.", 1, 256, "1"),
      int_option("--block-size", "BS", "Tokens per cache block: 16, 32, 64, 128 or 256.", 1, 256, "64"),
      int_option("--seed", "S", "Seed of the synthetic data.", 0, std::numeric_limits<std::int64_t>::max(), "1"),
      int_option("--reps", "R",
                 "Timed decode calls per backend, at least (more until 0.25 s are timed; fewer, but 2, once 8 s "
                 "have passed).",
                 2, 100000, "5"),
      int_option("--check-seqs", "N", "Sequences checked against the references (spread evenly; 0 = all).", 0, 1 << 16,
                 "2"),
      int_option("--copy-mib", "M", "Buffer size of the copy-bandwidth kernel in MiB (0 = automatic).", 0, 1 << 16, "0"),
      int_option("--query-len", "QL",
                 "Query tokens per sequence of the MTP line (its last QL tokens as new ones; 0 = no MTP line).", 0,
                 16, "2"),
  };
  return c;
}

}  // namespace cli
}  // namespace uq
