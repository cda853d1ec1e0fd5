// uq gather-kv: the cached K (rotated, as stored) and V of each sequence's first positions as
// bf16 rows, with uq::gather_kv (spec ultraquant.md §7).
#include "cli/bf16_output.hpp"
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"
#include "cli/shared_options.hpp"

#include "uq/gather_kv.hpp"

#include <limits>
#include <ostream>
#include <string>

namespace uq {
namespace cli {
namespace {

void run_gather_kv(const ParsedOptions& o, CommandIo& io) {
  const bool by_starts = o.given("--kv-start-loc"), by_lens = o.given("--seq-lens");
  if (by_starts == by_lens) throw UsageError("give one of --kv-start-loc and --seq-lens");
  if (o.text("--k-out") == o.text("--v-out"))
    throw UsageError("--k-out and --v-out name the same file (" + o.text("--k-out") + ")");
  ShapeBindings shapes;
  const std::string& cache_file = o.text("--cache");
  const npy::Array cache = load_uint8(cache_file, ShapePattern{"num_blocks", "block_size", "Hk", "slot_bytes"}, shapes);
  check_cache_geometry(cache_file, cache.shape);
  const std::string& tables_file = o.text("--block-tables");
  const std::vector<std::int32_t> tables = load_int32(tables_file, ShapePattern{"B", "max_blocks"}, shapes);
  const std::int64_t B = shapes["B"];
  if (shapes["max_blocks"] > std::numeric_limits<int>::max() || B >= std::numeric_limits<int>::max())
    throw InputError(tables_file, "fewer than 2^31 - 1 rows and columns",
                     "shape (" + std::to_string(B) + ", " + std::to_string(shapes["max_blocks"]) + ")");
  std::vector<std::int32_t> starts;
  if (by_starts) {
    const std::string& file = o.text("--kv-start-loc");
    starts = load_int32(file, ShapePattern{"B+1"}, shapes);
    if (shapes["B+1"] != B + 1)
      throw InputError(file, "shape [B + 1] = [" + std::to_string(B + 1) + "] (B from " + tables_file + ")",
                       "shape [" + std::to_string(shapes["B+1"]) + "]");
  } else {  // each sequence's whole length: kv_start_loc = the prefix sums
    const std::string& file = o.text("--seq-lens");
    const std::vector<std::int32_t> lens = load_int32(file, ShapePattern{"B"}, shapes);
    std::int64_t sum = 0;
    starts.push_back(0);
    for (std::int32_t l : lens) {
      if (l < 0) throw InputError(file, "lengths >= 0", std::to_string(l));
      sum += l;
      if (sum >= std::numeric_limits<std::int32_t>::max())
        throw InputError(file, "a sum of lengths below 2^31 - 1", "more");
      starts.push_back(static_cast<std::int32_t>(sum));
    }
  }
  // T: the rows the call writes (its last entry); a bad array is the library's to report.
  const std::int64_t T = starts.back() > 0 ? starts.back() : 0;
  const std::int64_t Hk = shapes["Hk"];
  std::int64_t elements = 0;
  if (!multiply_extents(T, Hk * 256, elements) || elements > (std::int64_t{1} << 34))
    throw InputError(by_starts ? o.text("--kv-start-loc") : o.text("--seq-lens"),
                     "at most 2^34 output elements (T x Hk x 256)", "T = " + std::to_string(T));

  GatherKvConfig cfg;
  cfg.check = !o.flag("--no-check");
  const Exec exec;
  const auto& cs = cache.shape;
  const DeviceView4<const std::uint8_t> cache_d =
      to_device_4d("uq::cli::cache", cache.data.data(), cs[0], cs[1], cs[2], cs[3]);
  const DeviceView2<const std::int32_t> tables_d = to_device_2d("uq::cli::block_tables", tables.data(), B, shapes["max_blocks"]);
  const DeviceView1<const std::int32_t> starts_d = to_device_1d("uq::cli::kv_start_loc", starts);
  DeviceView3<bf16> k_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::k"), T, Hk, 256);
  DeviceView3<bf16> v_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::v"), T, Hk, 256);
  // Rows no call writes (a malformed kv_start_loc with --no-check) read as 0.
  if (!cfg.check) {
    Kokkos::deep_copy(k_d, bf16{0});
    Kokkos::deep_copy(v_d, bf16{0});
  }
  const KvGather<Exec> gather(exec, cfg);
  // With check on, a bad kv_start_loc, bad block ids or lengths past the table throw uq::Error (exit 2).
  gather.run(cache_d, tables_d, starts_d, k_d, v_d);
  const Status status = gather.status();
  const std::vector<std::int64_t> shape = {T, Hk, 256};
  write_bf16(o.text("--k-out"), o.text("--out-dtype"), shape, to_host(k_d));
  write_bf16(o.text("--v-out"), o.text("--out-dtype"), shape, to_host(v_d));
  if (!status.ok())
    io.err << "uq gather-kv: warning: the device masked bad data (" << status.describe()
           << "); positions in bad blocks or past the block table gave zero rows, sequences with a bad "
              "kv_start_loc range were skipped\n";
  io.out << "uq gather-kv: wrote " << o.text("--k-out") << " and " << o.text("--v-out") << " "
         << npy::shape_string(shape) << " " << bf16_output_type_name(o.text("--out-dtype"))
         << " (" << B << " sequences); path " << path_name(gather.path()) << "; status " << status.describe() << "\n";
}

}  // namespace

Command gather_kv_command() {
  Command c("gather-kv", "dequantise cached K and V into bf16 rows (uq::gather_kv)", run_gather_kv);
  c.usage =
      "gather-kv --cache CACHE.npy --block-tables BT.npy\n"
      "                    (--kv-start-loc KSL.npy | --seq-lens SL.npy)\n"
      "                    --k-out K.npy --v-out V.npy\n"
      "                    [--out-dtype float32|bf16] [--no-check]";
  c.description =
      "For each sequence b, the K and V of its first n_b positions (position t in cache block BT[b, t / "
      "block_size] at t % block_size) as rows KSL[b] + t of K and V [T, Hk, 256]: n_b = KSL[b + 1] - "
      "KSL[b] (KSL: [B + 1], 0, non-decreasing, T: flash-attention's cu_seqlens_k), or, with --seq-lens, "
      "n_b = SL[b] and the rows one sequence after the other. K is written as stored: rotated by the "
      "Walsh-Hadamard transform (apply uq rotate-q to undo it, up to rounding); V as it was written. Each "
      "element is exactly the dequantised cache value, a bf16 (written as float32, or as uint16 bits with "
      "--out-dtype bf16): what an engine hands a prefill kernel for a long extend.\n\n"
      "A bad KSL, bad block ids and positions past the block table are an error (exit 2) unless --no-check "
      "is given; then such positions give zero rows, the counts are reported on stderr, and rows of a "
      "malformed KSL range are left as zeros.";
  c.options = {
      kv_cache_input_option(),
      sequence_block_tables_option(),
      text_option("--kv-start-loc", "KSL.npy", "Each sequence's first output row [B + 1]: int32 or int64.", false),
      text_option("--seq-lens", "SL.npy", "Positions of each sequence [B] (instead of --kv-start-loc).", false),
      text_option("--k-out", "K.npy", "Keys [T, Hk, 256], rotated as stored.", true),
      text_option("--v-out", "V.npy", "Values [T, Hk, 256].", true),
      bf16_out_dtype_option("values"),
      flag_option("--no-check", "Give zero rows for bad blocks and positions past the table instead of failing; report "
                                "the counts."),
  };
  return c;
}

}  // namespace cli
}  // namespace uq
