// uq::decode: paged split-K decode attention over the UltraQuant MXFP4 cache
// (spec ultraquant.md §5, revision 2: optional lse, one kernel when P = 1, partial traffic
// that grows with the tokens present; revision 3: several query tokens per sequence, §5.9),
// and uq::DecodePlan, its reusable workspace.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/checks.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/impl/decode_dispatch.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/kv_cache_checks.hpp"
#include "uq/impl/reduce_generic.hpp"
#include "uq/impl/start_locs.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/partitions.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace uq {

struct DecodeConfig {
  float softmax_scale = 1.0f / 16.0f;  // 1/sqrt(256)
  int qg = 0;                          // query heads per KV head: 6, 8 or 16; 0 = num_q_heads / num_kv_heads
  bool q_rotated = false;              // q already holds WHT(q) (natural order): only E4M3 rounding applied
  int partitions = 0;                  // 0 = the spec's default choice; else P in [1, 4096]
  Backend backend = Backend::Auto;
  bool check = true;                   // read the status counters after the call; throw on bad data
  // Query tokens per sequence of a run without query_start_loc (spec §5.9's uniform form:
  // q, out and lse have num_seqs * query_len rows); 1 is the one-token decode. At most the
  // plan's max_query_len.
  int query_len = 1;
};

// What a plan is sized for. num_seqs of a run may be anything up to max_seqs, the query tokens
// of a run with several per sequence (spec §5.9) anything up to max_query_tokens, n_b up to
// max_query_len; the other values must match the run's arguments exactly.
struct DecodeShape {
  int max_seqs = 0;
  int num_kv_heads = 0;
  int qg = 0;                  // 6, 8 or 16
  int block_size = 0;          // 16, 32, 64, 128 or 256
  int max_blocks_per_seq = 0;  // block_tables.extent(1)
  int max_query_len = 1;       // the most query tokens of one sequence: 1 .. kMaxDecodeQueryLen (16)
  int max_query_tokens = 0;    // the most query tokens of a run (T); 0: max_seqs * max_query_len
};

// The most query tokens a plan of this shape takes in one run.
inline std::int64_t max_query_tokens_of(const DecodeShape& s) {
  return s.max_query_tokens > 0 ? s.max_query_tokens : static_cast<std::int64_t>(s.max_seqs) * s.max_query_len;
}

// A caller-provided decode workspace must start at a multiple of this many bytes.
inline constexpr std::size_t kDecodeWorkspaceAlignment = 16;

namespace impl {

// Where a plan's workspace keeps what it needs (byte offsets; each region starts at a
// multiple of 256 bytes): the status counters, then l, m and the partial rows of
// rows = max_seqs * num_kv_heads * P * qg partition rows.
struct DecodeWorkspaceLayout {
  static constexpr std::size_t kRegion = 256;
  std::int64_t rows = 0;
  std::size_t counters = 0, l = 0, m = 0, out = 0, bytes = 0;

  static std::size_t round_up(std::size_t n) { return (n + kRegion - 1) / kRegion * kRegion; }

  explicit DecodeWorkspaceLayout(std::int64_t partition_rows) : rows(partition_rows) {
    const std::size_t r = static_cast<std::size_t>(rows);
    counters = 0;
    l = round_up(counters + kNumCounters * sizeof(unsigned long long));
    m = round_up(l + r * sizeof(float));
    out = round_up(m + r * sizeof(float));
    bytes = round_up(out + r * kHeadDim * sizeof(bf16));
  }
};

}  // namespace impl

// Workspace for decode: the status counters and the partial results of the split-K
// partitions (their l, m and bf16 rows), allocated once by the plan or given to it by the
// caller (workspace_bytes() says how much). run() allocates nothing, does not synchronise when
// check = false, and always launches the same grid for a given num_seqs, so it can be
// captured in a CUDA/HIP graph and replayed. Counters accumulate across runs with
// check = false (read them with status(), clear them with reset_status()).
//
// With one partition (config.partitions = 1; the spec's default choice is at least 2) run() is
// a single kernel that writes out itself; otherwise a partition kernel and a reducer
// (launches_per_run()). Partitions without tokens write only their l and m, so the partial
// traffic grows with the tokens present, not with the worst-case grid.
//
// Concurrency: the workspace is shared by every run of the plan, so runs must be ordered (one
// stream, or synchronised); use one plan per stream for concurrent work. Plans are not
// thread-safe. A captured graph fixes num_seqs = q.extent(0): pad with seq_len 0.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class DecodePlan {
 public:
  using memory_space = typename ExecSpace::memory_space;

  // Allocates its own workspace.
  DecodePlan(const ExecSpace& exec, const DecodeShape& shape, const DecodeConfig& cfg = {})
      : exec_(exec), shape_(shape), cfg_(cfg), device_(impl::device_info(exec)) {
    init();
    owned_ = Kokkos::View<std::uint8_t*, memory_space>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::decode::workspace"), layout().bytes);
    bind(owned_.data(), owned_.extent(0));
  }

  // Uses the caller's workspace: a rank-1 view of bytes (std::uint8_t, char, std::byte, ...)
  // in memory the execution space can access, contiguous, at least workspace_bytes(shape, cfg)
  // long and starting at a multiple of kDecodeWorkspaceAlignment (16) bytes. The plan keeps a
  // copy of the view (a managed view stays alive with the plan; the memory of an unmanaged one
  // must outlive it), clears the counters in it now and overwrites it on every run.
  template <class Workspace, class = std::enable_if_t<Kokkos::is_view<Workspace>::value>>
  DecodePlan(const ExecSpace& exec, const DecodeShape& shape, const DecodeConfig& cfg, const Workspace& workspace)
      : exec_(exec), shape_(shape), cfg_(cfg), device_(impl::device_info(exec)) {
    static_assert(static_cast<int>(Workspace::rank) == 1, "uq::DecodePlan: the workspace is a rank-1 view of bytes");
    static_assert(sizeof(typename Workspace::value_type) == 1, "uq::DecodePlan: the workspace is a view of bytes");
    static_assert(!std::is_const<typename Workspace::value_type>::value,
                  "uq::DecodePlan: the workspace must be writable (not const)");
    static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename Workspace::memory_space>::accessible,
                  "uq::DecodePlan: the workspace is not accessible from the execution space");
    constexpr const char* fn = "uq::DecodePlan";
    init();
    auto* base = reinterpret_cast<std::uint8_t*>(workspace.data());
    impl::require(workspace.span_is_contiguous() || workspace.extent(0) <= 1, fn, "workspace",
                  "a contiguous view (stride 1)", "stride " + impl::str(static_cast<std::int64_t>(workspace.stride(0))));
    const std::size_t have = workspace.extent(0);
    // (workspace_bytes: the spec's default P; a path's own P is never larger, so the plan may use
    // less of it)
    const std::size_t need = workspace_bytes(shape_, cfg_);
    impl::require(have >= need, fn, "workspace",
                  "at least workspace_bytes(shape, config) = " + std::to_string(need) + " bytes",
                  std::to_string(have) + " bytes");
    const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(base) % kDecodeWorkspaceAlignment;
    impl::require(misalignment == 0, fn, "workspace",
                  "a start address that is a multiple of " + std::to_string(kDecodeWorkspaceAlignment) + " bytes",
                  "address % " + std::to_string(kDecodeWorkspaceAlignment) + " = " + std::to_string(misalignment));
    holder_ = std::make_shared<Workspace>(workspace);
    bind(base, have);
  }

  // Bytes of workspace a plan of this shape and config needs (throws uq::Error for the
  // arguments the constructor rejects): the partial rows of max(max_seqs, max query tokens)
  // rows, so a plan for several query tokens per sequence costs what its query tokens need.
  static std::size_t workspace_bytes(const DecodeShape& shape, const DecodeConfig& cfg = {}) {
    check_plan(shape, cfg);
    return impl::DecodeWorkspaceLayout(partition_rows(shape, choose(shape, cfg))).bytes;
  }

  // q: [num_seqs, num_kv_heads * qg, 256] bf16, any strides. kv_cache: uint8
  // [num_blocks, block_size, num_kv_heads, slot_bytes]. block_tables: int32
  // [num_seqs, W] with W <= the plan's max_blocks_per_seq (a narrower table is the engine's
  // live one: the grid stays the plan's, lengths clamp to W * block_size). seq_lens: int32
  // [num_seqs]. out: like q.
  template <class Q, class Cache, class Tables, class Lens, class Out>
  void run(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
           const Out& out) const {
    run(q, kv_cache, block_tables, seq_lens, out, impl::NoDecodeLse<memory_space>());
  }

  // The same, also writing lse: float [num_seqs, num_kv_heads * qg], any strides (vLLM's
  // [num_heads, num_tokens] is a transposed view), the natural log of the sum of exp(score)
  // over the sequence's tokens: -inf for a sequence without tokens, NaN for a non-finite q.
  // A view whose data() is null (a default-constructed one) means "no lse".
  // With config.query_len > 1 (spec §5.9's uniform form) q, out and lse have num_seqs *
  // query_len rows, sequence b's query tokens rows b * query_len .. b * query_len + query_len - 1,
  // and the run is one of several query tokens (below).
  template <class Q, class Cache, class Tables, class Lens, class Out, class Lse,
            std::enable_if_t<impl::is_view_of_rank<Out, 3>::value, int> = 0>
  void run(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens, const Out& out,
           const Lse& lse) const {
    if (cfg_.query_len > 1)
      return run_queries(q, kv_cache, block_tables, seq_lens, impl::NoQueryStarts<memory_space>(), false, out, lse);
    constexpr const char* fn = "uq::decode";
    const int num_seqs = static_cast<int>(q.extent(0));
    check_inputs(q, kv_cache, block_tables, seq_lens);
    check_output(num_seqs, out);
    check_lse(num_seqs, lse);
    check_output_aliases(fn, q, kv_cache, block_tables, seq_lens, out, lse);
    if (cfg_.check) counters_.reset(exec_);
    const impl::DecodeParams p = params(static_cast<int>(block_tables.extent(1)));
    const impl::CacheAddressing cache = impl::cache_addressing(kv_cache);
    const bool direct = choice_.partitions == 1;  // one kernel: the partition writes out (and lse) itself
    impl::DecodeDispatch<ExecSpace>::run(exec_, candidate_, cfg_.backend, last_, q, cache, block_tables, seq_lens,
                                         partials_, counters_.view(), p, num_seqs, out, lse, direct);
    if (cfg_.check) throw_if_bad(fn, "q/block_tables/seq_lens", counters_.read(exec_));
  }

  // Several query tokens per sequence (spec §5.9: speculative-decoding verification, MTP, short
  // extends). q: [T, num_kv_heads * qg, 256] bf16, any strides, T <= the plan's max query tokens;
  // query_start_loc: int32 [num_seqs + 1] (0, non-decreasing, T; n_b = its differences, at most
  // the plan's max_query_len); seq_lens count the new tokens (already in the cache); out: like q;
  // lse: float [T, num_q_heads] or none. Query token j of sequence b (row query_start_loc[b] + j)
  // attends to positions 0 .. seq_len - n_b + j; a row that sees none gives 0 and lse -inf.
  // With check = true the host reads query_start_loc first and throws uq::Error if it is bad;
  // with check = false the device masks a malformed sequence (counted in bad_start_locs). The
  // grid is the plan's whatever the n_b (graph-capturable); with every n_b = 1 the bits are
  // those of run() above on the same path. Its own launch type: the gfx950 path has a kernel for
  // it where max_query_len * qg <= 32 (a sequence's query rows in one or two MFMA N tiles), the sm90
  // path where max_query_len * qg <= 32 (in the N of one wgmma); elsewhere it runs the generic kernels
  // (path_reason() says why). Both read each KV tile once for all
  // query tokens.
  // A plan with max_query_len > 1 keeps the rows of query tokens past a sequence's first in
  // Kokkos level-1 team scratch, which Kokkos allocates at the first launch that needs it: run
  // the plan once before capturing it in a graph (as engines warm up anyway).
  template <class Q, class Cache, class Tables, class Lens, class Starts, class Out,
            std::enable_if_t<impl::is_view_of_rank<Starts, 1>::value, int> = 0>
  void run(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
           const Starts& query_start_loc, const Out& out) const {
    run_queries(q, kv_cache, block_tables, seq_lens, query_start_loc, true, out, impl::NoDecodeLse<memory_space>());
  }

  template <class Q, class Cache, class Tables, class Lens, class Starts, class Out, class Lse,
            std::enable_if_t<impl::is_view_of_rank<Starts, 1>::value, int> = 0>
  void run(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
           const Starts& query_start_loc, const Out& out, const Lse& lse) const {
    run_queries(q, kv_cache, block_tables, seq_lens, query_start_loc, true, out, lse);
  }

  // The two stages separately (benchmarks and tests), at any P (P = 1 included: then the
  // partition kernel writes partial rows like any other), always on the device's candidate
  // path (no per-call fallback: a tuned launcher that cannot take the call throws). run_partitions writes the partial
  // results of num_seqs = q.extent(0) sequences; run_reduce combines them into out (and lse).
  template <class Q, class Cache, class Tables, class Lens>
  void run_partitions(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens) const {
    check_inputs(q, kv_cache, block_tables, seq_lens);
    launch_partitions(q, kv_cache, block_tables, seq_lens);
  }

  template <class Out>
  void run_reduce(int num_seqs, const Out& out) const {
    run_reduce(num_seqs, out, impl::NoDecodeLse<memory_space>());
  }

  template <class Out, class Lse>
  void run_reduce(int num_seqs, const Out& out, const Lse& lse) const {
    check_output(num_seqs, out);
    check_lse(num_seqs, lse);
    impl::require_no_alias("uq::decode", "out", out, "workspace", workspace_view());
    if (lse.data() != nullptr) impl::require_no_alias("uq::decode", "lse", lse, "workspace", workspace_view());
    impl::DecodeDispatch<ExecSpace>::run_reduce(exec_, stage_path(), partials_, out, lse,
                                                params(shape_.max_blocks_per_seq), num_seqs);
  }

  // The path of the last run (before any run: the device's candidate), and why it is not the
  // tuned path ("" when it is): Auto falls back to generic, with the reason, when the tuned
  // launcher cannot take a call's arguments.
  Path path() const { return last_.path; }
  const std::string& path_reason() const { return last_.reason; }
  const DeviceInfo& device() const { return device_; }
  int partitions() const { return choice_.partitions; }
  int tile_groups_per_partition() const { return choice_.tile_groups_per_part; }
  // Kernels one run() launches when num_seqs > 0: 1 with one partition (no reducer), else 2
  // (with several query tokens per sequence too).
  int launches_per_run() const { return choice_.partitions == 1 ? 1 : 2; }
  const DecodeShape& shape() const { return shape_; }
  const DecodeConfig& config() const { return cfg_; }
  // The workspace's partial results: [max_seqs][num_kv_heads][P][qg] rows (the rows of query
  // tokens instead of sequences after a run with several query tokens per sequence). A row's partial
  // output holds data only where its l > 0 (tests, benchmarks). Their l and m are in the same
  // row order, except on the sm90 path: [max_seqs][num_kv_heads][qg][P] there (each query row's
  // partitions together for its reducer, arch/sm90/decode_args.hpp partial_lm_index).
  const impl::DecodePartials<memory_space>& partials() const { return partials_; }

  Status status() const { return counters_.read(exec_); }
  void reset_status() const { counters_.reset(exec_); }

 private:
  static void check_plan(const DecodeShape& shape, const DecodeConfig& cfg) {
    constexpr const char* fn = "uq::decode";
    using impl::require;
    using impl::str;
    require(shape.max_seqs >= 0, fn, "shape.max_seqs", ">= 0", str(shape.max_seqs));
    require(shape.num_kv_heads >= 1, fn, "shape.num_kv_heads", ">= 1", str(shape.num_kv_heads));
    require(is_decode_qg(shape.qg), fn, "shape.qg", "6, 8 or 16", str(shape.qg));
    require(is_decode_block_size(shape.block_size), fn, "shape.block_size", "16, 32, 64, 128 or 256",
            str(shape.block_size));
    require(shape.max_blocks_per_seq >= 0, fn, "shape.max_blocks_per_seq", ">= 0",
            str(shape.max_blocks_per_seq));
    require(std::isfinite(cfg.softmax_scale), fn, "config.softmax_scale", "a finite number",
            std::to_string(cfg.softmax_scale));
    require(cfg.partitions >= 0 && cfg.partitions <= kMaxPartitions, fn, "config.partitions",
            "0 (default) or 1.." + str(kMaxPartitions), str(cfg.partitions));
    require(cfg.qg == 0 || cfg.qg == shape.qg, fn, "config.qg", "0 or shape.qg = " + str(shape.qg),
            str(cfg.qg));
    require(shape.max_query_len >= 1 && shape.max_query_len <= kMaxDecodeQueryLen, fn, "shape.max_query_len",
            "1.." + str(kMaxDecodeQueryLen) + " (longer extends: uq::gather_kv and a prefill kernel)",
            str(shape.max_query_len));
    require(shape.max_query_tokens >= 0, fn, "shape.max_query_tokens", ">= 0 (0: max_seqs * max_query_len)",
            str(shape.max_query_tokens));
    require(cfg.query_len >= 1 && cfg.query_len <= shape.max_query_len, fn, "config.query_len",
            "1..shape.max_query_len = " + str(shape.max_query_len), str(cfg.query_len));
    require(max_query_tokens_of(shape) <= std::numeric_limits<int>::max(), fn, "shape",
            "max query tokens <= 2^31 - 1", str(max_query_tokens_of(shape)));
    const PartitionChoice c = choose(shape, cfg);
    require(static_cast<std::int64_t>(shape.max_seqs) * shape.num_kv_heads * c.partitions <=
                std::numeric_limits<int>::max(),
            fn, "shape", "max_seqs * num_kv_heads * partitions <= 2^31 - 1",
            str(static_cast<std::int64_t>(shape.max_seqs) * shape.num_kv_heads * c.partitions));
    // The generic reducer's league: one team per (sequence or query token, query head, chunk of dims).
    const std::int64_t reduce_league = max_rows(shape) * shape.num_kv_heads * shape.qg *
                                       (kHeadDim / impl::kReduceChunkDims);
    require(reduce_league <= std::numeric_limits<int>::max(), fn, "shape",
            "max(max_seqs, max query tokens) * num_kv_heads * qg * 4 <= 2^31 - 1 (the reducer's grid)",
            str(reduce_league));
  }

  static PartitionChoice choose(const DecodeShape& shape, const DecodeConfig& cfg) {
    return choose_partitions(shape.max_seqs, shape.max_blocks_per_seq, shape.block_size, cfg.partitions);
  }

  // The most rows of q a run takes: sequences, or query tokens (spec §5.9).
  static std::int64_t max_rows(const DecodeShape& shape) {
    return std::max<std::int64_t>(shape.max_seqs, max_query_tokens_of(shape));
  }

  static std::int64_t partition_rows(const DecodeShape& shape, const PartitionChoice& c) {
    return max_rows(shape) * shape.num_kv_heads * c.partitions * shape.qg;
  }

  impl::DecodeWorkspaceLayout layout() const { return impl::DecodeWorkspaceLayout(partition_rows(shape_, choice_)); }

  void init() {
    check_plan(shape_, cfg_);
    choice_ = choose(shape_, cfg_);
    // The device's candidate (Native without one throws here); each run then asks the tuned
    // launchers whether they can take that run's arguments.
    last_ = candidate_ = impl::DecodeDispatch<ExecSpace>::candidate(cfg_.backend, device_, choice_.partitions == 1);
    // Without an override, the candidate path may choose its own P (never above the spec's,
    // which sized the workspace: workspace_bytes() needs no device).
    if (cfg_.partitions == 0)
      choice_ = impl::DecodeDispatch<ExecSpace>::default_partitions(
          candidate_.path, shape_.max_seqs, shape_.num_kv_heads, shape_.max_blocks_per_seq, shape_.block_size,
          device_.compute_units, choice_);
    // A plan made for several query tokens learns their path now (Native without one throws).
    if (shape_.max_query_len > 1) queries_path();
  }

  // The path of runs with several query tokens per sequence (their own launch type, spec §5.9),
  // found on the first such run of a plan made for one.
  const PathChoice& queries_path() const {
    if (!queries_candidate_)
      queries_candidate_ = impl::DecodeDispatch<ExecSpace>::queries_candidate(cfg_.backend, device_,
                                                                              choice_.partitions == 1);
    return *queries_candidate_;
  }

  // Views into the workspace at `base` (bytes long).
  void bind(std::uint8_t* base, std::size_t bytes) {
    const impl::DecodeWorkspaceLayout w = layout();
    workspace_ = Kokkos::View<std::uint8_t*, memory_space, Kokkos::MemoryUnmanaged>(base, bytes);
    const std::size_t rows = static_cast<std::size_t>(w.rows);
    partials_.out = decltype(partials_.out)(reinterpret_cast<bf16*>(base + w.out), rows * kHeadDim);
    partials_.l = decltype(partials_.l)(reinterpret_cast<float*>(base + w.l), rows);
    partials_.m = decltype(partials_.m)(reinterpret_cast<float*>(base + w.m), rows);
    counters_ = impl::StatusCounters<ExecSpace>(exec_, reinterpret_cast<unsigned long long*>(base + w.counters));
  }

  const Kokkos::View<std::uint8_t*, memory_space, Kokkos::MemoryUnmanaged>& workspace_view() const {
    return workspace_;
  }

  // A run with several query tokens per sequence (query_start_loc given, or the uniform form of
  // config.query_len): the checks, then the generic kernels on the query tokens.
  template <class Q, class Cache, class Tables, class Lens, class Starts, class Out, class Lse>
  void run_queries(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
                   const Starts& starts, bool given, const Out& out, const Lse& lse) const {
    static_assert(impl::IndexViewContract<ExecSpace, Starts, 1, std::int32_t>::ok, "");
    constexpr const char* fn = "uq::decode";
    using impl::require;
    using impl::str;
    const std::int64_t num_seqs = static_cast<std::int64_t>(block_tables.extent(0));
    const std::int64_t T = static_cast<std::int64_t>(q.extent(0));
    check_inputs(q, kv_cache, block_tables, seq_lens, num_seqs, false);
    require(T <= max_query_tokens_of(shape_), fn, "q",
            "extent(0) (query tokens) <= the plan's max query tokens = " + str(max_query_tokens_of(shape_)), str(T));
    if (given) {
      impl::require_extent(fn, "query_start_loc", starts, 0, num_seqs + 1, "num_seqs + 1 = block_tables.extent(0) + 1");
      impl::require_no_alias(fn, "workspace", workspace_view(), "query_start_loc", starts);
    } else {
      require(T == num_seqs * cfg_.query_len, fn, "q",
              "extent(0) == num_seqs * config.query_len = " + str(num_seqs) + " * " + str(cfg_.query_len), str(T));
    }
    check_output(T, out, "query tokens");
    check_lse(T, lse, "query tokens");
    check_output_aliases(fn, q, kv_cache, block_tables, seq_lens, out, lse);
    if (given) {
      impl::require_no_alias(fn, "out", out, "query_start_loc", starts);
      if (lse.data() != nullptr) impl::require_no_alias(fn, "lse", lse, "query_start_loc", starts);
    }
    if (cfg_.check) {
      if (given)  // spec §5.9: a bad query_start_loc is a host error before anything runs
        impl::check_start_locs(fn, "query_start_loc", impl::start_locs_on_host(exec_, starts), T,
                               "T = q.extent(0)", shape_.max_query_len, "the plan's max_query_len");
      counters_.reset(exec_);
    }
    impl::DecodeParams p = params(static_cast<int>(block_tables.extent(1)));
    p.query_len = given ? 1 : cfg_.query_len;
    p.max_query_len = given ? shape_.max_query_len : cfg_.query_len;
    const bool direct = choice_.partitions == 1;
    impl::DecodeDispatch<ExecSpace>::run_queries(exec_, queries_path(), cfg_.backend, last_, q,
                                                 impl::cache_addressing(kv_cache), block_tables, seq_lens, starts,
                                                 partials_, counters_.view(), p, static_cast<int>(num_seqs), out, lse,
                                                 direct);
    if (cfg_.check) throw_if_bad(fn, "q/block_tables/seq_lens/query_start_loc", counters_.read(exec_));
  }

  // out and lse against every input and the workspace.
  template <class Q, class Cache, class Tables, class Lens, class Out, class Lse>
  void check_output_aliases(const char* fn, const Q& q, const Cache& kv_cache, const Tables& block_tables,
                            const Lens& seq_lens, const Out& out, const Lse& lse) const {
    impl::require_no_alias(fn, "out", out, "q", q);
    impl::require_no_alias(fn, "out", out, "kv_cache", kv_cache);
    impl::require_no_alias(fn, "out", out, "block_tables", block_tables);
    impl::require_no_alias(fn, "out", out, "seq_lens", seq_lens);
    impl::require_no_alias(fn, "out", out, "workspace", workspace_view());
    if (lse.data() != nullptr) {
      impl::require_no_alias(fn, "lse", lse, "q", q);
      impl::require_no_alias(fn, "lse", lse, "kv_cache", kv_cache);
      impl::require_no_alias(fn, "lse", lse, "block_tables", block_tables);
      impl::require_no_alias(fn, "lse", lse, "seq_lens", seq_lens);
      impl::require_no_alias(fn, "lse", lse, "out", out);
      impl::require_no_alias(fn, "lse", lse, "workspace", workspace_view());
    }
  }

  template <class Q, class Cache, class Tables, class Lens>
  void check_inputs(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens) const {
    check_inputs(q, kv_cache, block_tables, seq_lens, static_cast<std::int64_t>(q.extent(0)), true);
  }

  // num_seqs: q.extent(0) for the one-token decode, block_tables.extent(0) with several query
  // tokens per sequence (q's rows are then query tokens, checked by the caller).
  template <class Q, class Cache, class Tables, class Lens>
  void check_inputs(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
                    std::int64_t num_seqs, bool one_token) const {
    static_assert(impl::ViewContract<ExecSpace, Q, bf16, 3>::ok, "");
    static_assert(impl::ViewContract<ExecSpace, Cache, std::uint8_t, 4>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Tables, 2, std::int32_t>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Lens, 1, std::int32_t>::ok, "");
    constexpr const char* fn = "uq::decode";
    using impl::require;
    using impl::str;
    impl::require_extent(fn, "q", q, 2, kHeadDim, "head dim");
    const impl::KvCacheGeometry geo = impl::check_kv_cache(fn, kv_cache);
    require(num_seqs <= shape_.max_seqs, fn, one_token ? "q" : "block_tables",
            "extent(0) (num_seqs) <= the plan's max_seqs = " + str(shape_.max_seqs), str(num_seqs));
    require(geo.num_kv_heads == shape_.num_kv_heads, fn, "kv_cache",
            "extent(2) (num_kv_heads) == " + str(shape_.num_kv_heads), str(geo.num_kv_heads));
    require(geo.block_size == shape_.block_size, fn, "kv_cache",
            "extent(1) (block_size) == " + str(shape_.block_size), str(geo.block_size));
    impl::require_extent(fn, "q", q, 1, static_cast<std::int64_t>(shape_.num_kv_heads) * shape_.qg,
                         "num_q_heads = num_kv_heads * qg");
    impl::require_extent(fn, "block_tables", block_tables, 0, num_seqs, one_token ? "num_seqs = q.extent(0)" : "num_seqs");
    const std::int64_t width = static_cast<std::int64_t>(block_tables.extent(1));
    require(width <= shape_.max_blocks_per_seq, fn, "block_tables",
            "extent(1) <= the plan's max_blocks_per_seq = " + str(shape_.max_blocks_per_seq), str(width));
    impl::require_extent(fn, "seq_lens", seq_lens, 0, num_seqs,
                         one_token ? "num_seqs = q.extent(0)" : "num_seqs = block_tables.extent(0)");
    const auto& ws = workspace_view();
    impl::require_no_alias(fn, "workspace", ws, "q", q);
    impl::require_no_alias(fn, "workspace", ws, "kv_cache", kv_cache);
    impl::require_no_alias(fn, "workspace", ws, "block_tables", block_tables);
    impl::require_no_alias(fn, "workspace", ws, "seq_lens", seq_lens);
  }

  template <class Q, class Cache, class Tables, class Lens>
  void launch_partitions(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens) const {
    impl::DecodeDispatch<ExecSpace>::run_partitions(exec_, stage_path(), q, impl::cache_addressing(kv_cache), block_tables,
                                                    seq_lens, partials_, counters_.view(),
                                                    params(static_cast<int>(block_tables.extent(1))),
                                                    static_cast<int>(q.extent(0)));
  }

  // The path of the stages run separately: the plan's tuned path (a call it cannot take
  // throws), or generic.
  Path stage_path() const { return candidate_.path; }

  // rows: num_seqs, or the query tokens of a run with several per sequence (`what`).
  template <class Out>
  void check_output(std::int64_t rows, const Out& out, const char* what = "num_seqs") const {
    static_assert(impl::OutputViewContract<ExecSpace, Out, bf16, 3>::ok, "");
    constexpr const char* fn = "uq::decode";
    const bool seqs = std::string(what) == "num_seqs";
    const std::int64_t most = seqs ? shape_.max_seqs : max_query_tokens_of(shape_);
    impl::require(rows >= 0 && rows <= most, fn, what, "0.." + impl::str(most), impl::str(rows));
    impl::require_extent(fn, "out", out, 0, rows, what);
    impl::require_extent(fn, "out", out, 1, static_cast<std::int64_t>(shape_.num_kv_heads) * shape_.qg,
                         "num_q_heads = num_kv_heads * qg");
    impl::require_extent(fn, "out", out, 2, kHeadDim, "head dim");
  }

  template <class Lse>
  void check_lse(std::int64_t rows, const Lse& lse, const char* what = "num_seqs") const {
    static_assert(impl::OutputViewContract<ExecSpace, Lse, float, 2>::ok, "");
    if (lse.data() == nullptr) return;  // not wanted
    constexpr const char* fn = "uq::decode";
    impl::require_extent(fn, "lse", lse, 0, rows, what);
    impl::require_extent(fn, "lse", lse, 1, static_cast<std::int64_t>(shape_.num_kv_heads) * shape_.qg,
                         "num_q_heads = num_kv_heads * qg");
  }

  impl::DecodeParams params(int table_blocks) const {
    impl::DecodeParams p;
    p.num_kv_heads = shape_.num_kv_heads;
    p.qg = shape_.qg;
    p.max_blocks_per_seq = table_blocks;
    p.partitions = choice_.partitions;
    p.tgpp = choice_.tile_groups_per_part;
    p.scale = cfg_.softmax_scale;
    p.q_rotated = cfg_.q_rotated;
    return p;
  }

  ExecSpace exec_;
  DecodeShape shape_;
  DecodeConfig cfg_;
  DeviceInfo device_;
  PartitionChoice choice_;
  PathChoice candidate_;               // the device's tuned path (or Generic) and why
  mutable std::optional<PathChoice> queries_candidate_;  // the same for several query tokens
  mutable PathChoice last_;            // of the last run
  Kokkos::View<std::uint8_t*, memory_space> owned_;  // the plan's own workspace (empty when the caller's)
  std::shared_ptr<const void> holder_;              // a copy of the caller's workspace view
  Kokkos::View<std::uint8_t*, memory_space, Kokkos::MemoryUnmanaged> workspace_;
  impl::DecodePartials<memory_space> partials_;
  impl::StatusCounters<ExecSpace> counters_;
};

// The shape a plan needs for these arguments (qg from config or num_q_heads / num_kv_heads;
// with config.query_len > 1, spec §5.9's uniform form: num_seqs = block_tables.extent(0) and
// max_query_len = query_len).
template <class Q, class Cache, class Tables>
DecodeShape decode_shape_of(const Q& q, const Cache& kv_cache, const Tables& block_tables,
                            const DecodeConfig& cfg) {
  constexpr const char* fn = "uq::decode";
  const impl::KvCacheGeometry geo = impl::check_kv_cache(fn, kv_cache);
  DecodeShape s;
  s.max_seqs = static_cast<int>(cfg.query_len > 1 ? block_tables.extent(0) : q.extent(0));
  s.max_query_len = cfg.query_len;
  s.num_kv_heads = geo.num_kv_heads;
  const std::int64_t hq = static_cast<std::int64_t>(q.extent(1));
  if (cfg.qg != 0) {
    s.qg = cfg.qg;
  } else {
    impl::require(hq % s.num_kv_heads == 0, fn, "q",
                  "extent(1) (num_q_heads) a multiple of num_kv_heads = " + impl::str(s.num_kv_heads),
                  impl::str(hq));
    s.qg = static_cast<int>(hq / s.num_kv_heads);
    impl::require(is_decode_qg(s.qg), fn, "q",
                  "extent(1) / num_kv_heads (the query group size) in {6, 8, 16}", impl::str(s.qg));
  }
  s.block_size = static_cast<int>(kv_cache.extent(1));
  impl::require(block_tables.extent(1) <= static_cast<std::size_t>(std::numeric_limits<int>::max()), fn,
                "block_tables", "extent(1) (max_blocks_per_seq) <= 2^31 - 1",
                impl::str(static_cast<std::int64_t>(block_tables.extent(1))));
  s.max_blocks_per_seq = static_cast<int>(block_tables.extent(1));
  impl::require(q.extent(0) <= static_cast<std::size_t>(std::numeric_limits<int>::max()), fn, "q",
                "extent(0) <= 2^31 - 1", impl::str(static_cast<std::int64_t>(q.extent(0))));
  impl::require(block_tables.extent(0) <= static_cast<std::size_t>(std::numeric_limits<int>::max()), fn,
                "block_tables", "extent(0) <= 2^31 - 1", impl::str(static_cast<std::int64_t>(block_tables.extent(0))));
  return s;
}

// The shape a plan needs for a run with several query tokens per sequence (spec §5.9) whose
// query_start_loc, read on the host, is `query_start_loc`: num_seqs = block_tables.extent(0),
// max_query_len = its largest n_b (at most 16: a larger one is reported by the run),
// max_query_tokens = q.extent(0).
template <class Q, class Cache, class Tables>
DecodeShape decode_shape_of(const Q& q, const Cache& kv_cache, const Tables& block_tables,
                            const std::vector<std::int32_t>& query_start_loc, const DecodeConfig& cfg) {
  DecodeConfig one = cfg;
  one.query_len = 1;
  DecodeShape s = decode_shape_of(q, kv_cache, block_tables, one);
  s.max_seqs = static_cast<int>(block_tables.extent(0));
  s.max_query_len = std::max(cfg.query_len, impl::largest_start_range(query_start_loc, kMaxDecodeQueryLen));
  s.max_query_tokens = static_cast<int>(q.extent(0));
  return s;
}

// One call with a temporary plan. The overloads with `lse` also write it (DecodePlan::run).
template <class ExecSpace, class Q, class Cache, class Tables, class Lens, class Out,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void decode(const ExecSpace& exec, const Q& q, const Cache& kv_cache, const Tables& block_tables,
            const Lens& seq_lens, const Out& out, const DecodeConfig& cfg = {}) {
  DecodePlan<ExecSpace>(exec, decode_shape_of(q, kv_cache, block_tables, cfg), cfg)
      .run(q, kv_cache, block_tables, seq_lens, out);
}

template <class ExecSpace, class Q, class Cache, class Tables, class Lens, class Out, class Lse,
          std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value && Kokkos::is_view<Lse>::value &&
                               impl::is_view_of_rank<Out, 3>::value,
                           int> = 0>
void decode(const ExecSpace& exec, const Q& q, const Cache& kv_cache, const Tables& block_tables,
            const Lens& seq_lens, const Out& out, const Lse& lse, const DecodeConfig& cfg = {}) {
  DecodePlan<ExecSpace>(exec, decode_shape_of(q, kv_cache, block_tables, cfg), cfg)
      .run(q, kv_cache, block_tables, seq_lens, out, lse);
}

template <class Q, class Cache, class Tables, class Lens, class Out,
          class = std::enable_if_t<Kokkos::is_view<Q>::value>>
void decode(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
            const Out& out, const DecodeConfig& cfg = {}) {
  decode(typename Out::execution_space(), q, kv_cache, block_tables, seq_lens, out, cfg);
}

template <class Q, class Cache, class Tables, class Lens, class Out, class Lse,
          std::enable_if_t<Kokkos::is_view<Q>::value && Kokkos::is_view<Lse>::value &&
                               impl::is_view_of_rank<Out, 3>::value,
                           int> = 0>
void decode(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
            const Out& out, const Lse& lse, const DecodeConfig& cfg = {}) {
  decode(typename Out::execution_space(), q, kv_cache, block_tables, seq_lens, out, lse, cfg);
}

// Several query tokens per sequence (spec §5.9; DecodePlan::run with query_start_loc): q, out
// [T, num_q_heads, 256], query_start_loc int32 [num_seqs + 1], lse [T, num_q_heads]. The
// temporary plan is sized from query_start_loc, which is read on the host (a wait for exec).
template <class ExecSpace, class Q, class Cache, class Tables, class Lens, class Starts, class Out, class Lse,
          std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value && impl::is_view_of_rank<Starts, 1>::value &&
                               Kokkos::is_view<Lse>::value,
                           int> = 0>
void decode(const ExecSpace& exec, const Q& q, const Cache& kv_cache, const Tables& block_tables,
            const Lens& seq_lens, const Starts& query_start_loc, const Out& out, const Lse& lse,
            const DecodeConfig& cfg = {}) {
  static_assert(impl::IndexViewContract<ExecSpace, Starts, 1, std::int32_t>::ok, "");
  const std::vector<std::int32_t> locs = impl::start_locs_on_host(exec, query_start_loc);
  DecodePlan<ExecSpace>(exec, decode_shape_of(q, kv_cache, block_tables, locs, cfg), cfg)
      .run(q, kv_cache, block_tables, seq_lens, query_start_loc, out, lse);
}

template <class ExecSpace, class Q, class Cache, class Tables, class Lens, class Starts, class Out,
          std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value && impl::is_view_of_rank<Starts, 1>::value &&
                               Kokkos::is_view<Out>::value,
                           int> = 0>
void decode(const ExecSpace& exec, const Q& q, const Cache& kv_cache, const Tables& block_tables,
            const Lens& seq_lens, const Starts& query_start_loc, const Out& out, const DecodeConfig& cfg = {}) {
  decode(exec, q, kv_cache, block_tables, seq_lens, query_start_loc, out, impl::NoDecodeLse<typename Out::memory_space>(),
         cfg);
}

template <class Q, class Cache, class Tables, class Lens, class Starts, class Out,
          std::enable_if_t<Kokkos::is_view<Q>::value && impl::is_view_of_rank<Starts, 1>::value &&
                               Kokkos::is_view<Out>::value,
                           int> = 0>
void decode(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
            const Starts& query_start_loc, const Out& out, const DecodeConfig& cfg = {}) {
  decode(typename Out::execution_space(), q, kv_cache, block_tables, seq_lens, query_start_loc, out, cfg);
}

template <class Q, class Cache, class Tables, class Lens, class Starts, class Out, class Lse,
          std::enable_if_t<Kokkos::is_view<Q>::value && impl::is_view_of_rank<Starts, 1>::value &&
                               Kokkos::is_view<Lse>::value,
                           int> = 0>
void decode(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
            const Starts& query_start_loc, const Out& out, const Lse& lse, const DecodeConfig& cfg = {}) {
  decode(typename Out::execution_space(), q, kv_cache, block_tables, seq_lens, query_start_loc, out, lse, cfg);
}

}  // namespace uq
