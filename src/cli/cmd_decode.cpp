// uq decode: paged decode attention over an UltraQuant cache with uq::DecodePlan.
#include "cli/bf16_output.hpp"
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"
#include "cli/shared_options.hpp"

#include "uq/decode.hpp"

#include <limits>
#include <ostream>
#include <string>

namespace uq {
namespace cli {
namespace {

void run_decode(const ParsedOptions& o, CommandIo& io) {
  ShapeBindings shapes;
  const std::string& q_file = o.text("--q");
  const std::string& cache_file = o.text("--cache");
  // Several query tokens per sequence (spec ultraquant.md §5.9): q has T = B x QL rows, or the
  // rows query_start_loc gives; else one per sequence (T = B).
  const std::int64_t query_len = o.integer("--query-len");
  const bool starts_given = o.given("--query-start-loc");
  if (starts_given && o.given("--query-len"))
    throw UsageError("--query-len and --query-start-loc are two forms of the same thing: give one");
  const bool several = starts_given || query_len > 1;
  const Bf16Tensor q = load_bf16(q_file, ShapePattern{several ? "T" : "B", "Hq", "256"}, shapes);
  const npy::Array cache = load_uint8(cache_file, ShapePattern{"num_blocks", "block_size", "Hk", "slot_bytes"}, shapes);
  check_cache_geometry(cache_file, cache.shape);
  const std::vector<std::int32_t> tables =
      load_int32(o.text("--block-tables"), ShapePattern{"B", "max_blocks"}, shapes);
  const std::vector<std::int32_t> lens = load_int32(o.text("--seq-lens"), ShapePattern{"B"}, shapes);
  std::vector<std::int32_t> starts;
  if (starts_given) {
    const std::string& file = o.text("--query-start-loc");
    starts = load_int32(file, ShapePattern{"B+1"}, shapes);
    if (shapes["B+1"] != shapes["B"] + 1)
      throw InputError(file, "shape [B + 1] = [" + std::to_string(shapes["B"] + 1) + "] (B from " +
                                 o.text("--seq-lens") + ")",
                       "shape [" + std::to_string(shapes["B+1"]) + "]");
  }

  const std::int64_t B = shapes["B"], Hq = shapes["Hq"], Hk = shapes["Hk"];
  const std::int64_t T = several ? shapes["T"] : B;
  if (!starts_given && several && T != B * query_len)
    throw InputError(q_file, "T = B x QL = " + product_text(B, query_len) + " rows (B from " + o.text("--seq-lens") +
                                 ", QL from --query-len)",
                     "shape " + npy::shape_string(q.shape));
  const std::int64_t qg = o.integer("--qg");
  if (Hq % qg != 0 || Hq / qg != Hk)  // not Hk * qg: Hk comes from a file and may be huge
    throw InputError(q_file,
                     "Hq = Hk x qg = " + product_text(Hk, qg) + " query heads (Hk from " + cache_file +
                         ", qg from --qg)",
                     "shape " + npy::shape_string(q.shape));
  if (shapes["max_blocks"] > std::numeric_limits<int>::max() || B > std::numeric_limits<int>::max() ||
      T > std::numeric_limits<int>::max())
    throw InputError(o.text("--block-tables"), "fewer than 2^31 rows and columns",
                     "shape (" + std::to_string(B) + ", " + std::to_string(shapes["max_blocks"]) + ")");

  DecodeConfig cfg;
  cfg.softmax_scale = static_cast<float>(o.number("--scale"));
  cfg.qg = static_cast<int>(qg);
  cfg.q_rotated = o.flag("--q-rotated");
  cfg.partitions = static_cast<int>(o.integer("--partitions"));
  cfg.backend = parse_backend(o.text("--backend"));
  cfg.check = !o.flag("--no-check");
  if (!starts_given) cfg.query_len = static_cast<int>(query_len);
  const bool want_lse = o.given("--lse");
  if (want_lse && o.text("--lse") == o.text("--out"))
    throw UsageError("--lse and --out name the same file (" + o.text("--out") + ")");

  const Exec exec;
  const auto& cs = cache.shape;
  auto q_d = to_device_3d("uq::cli::q", q.values.data(), T, Hq, 256);
  auto cache_d = to_device_4d("uq::cli::cache", cache.data.data(), cs[0], cs[1], cs[2], cs[3]);
  auto tables_d = to_device_2d("uq::cli::block_tables", tables.data(), B, shapes["max_blocks"]);
  auto lens_d = to_device_1d("uq::cli::seq_lens", lens);
  DeviceView3<bf16> out_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::out"), T, Hq, 256);
  // Not allocated (data() null: no lse) unless asked for.
  DeviceView2<float> lse_d;
  if (want_lse) lse_d = DeviceView2<float>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::lse"), T, Hq);

  DecodeShape shape;
  shape.max_seqs = static_cast<int>(B);
  shape.num_kv_heads = static_cast<int>(Hk);
  shape.qg = static_cast<int>(qg);
  shape.block_size = static_cast<int>(cs[1]);
  shape.max_blocks_per_seq = static_cast<int>(shapes["max_blocks"]);
  if (several) {  // sized for this call's query tokens (a larger n_b than 16 is reported by run())
    shape.max_query_len = starts_given ? impl::largest_start_range(starts, kMaxDecodeQueryLen)
                                       : static_cast<int>(query_len);
    shape.max_query_tokens = static_cast<int>(T);
  }
  const DecodePlan<Exec> plan(exec, shape, cfg);
  // With check on, bad block ids or seq lens, a bad query_start_loc, or a non-finite q, make run()
  // throw uq::Error (exit 2).
  const DeviceView3<const bf16> q_c = q_d;
  const DeviceView4<const std::uint8_t> cache_c = cache_d;
  const DeviceView2<const std::int32_t> tables_c = tables_d;
  const DeviceView1<const std::int32_t> lens_c = lens_d;
  if (starts_given)
    plan.run(q_c, cache_c, tables_c, lens_c, DeviceView1<const std::int32_t>(to_device_1d("uq::cli::qsl", starts)), out_d,
             lse_d);
  else
    plan.run(q_c, cache_c, tables_c, lens_c, out_d, lse_d);
  const Status status = plan.status();
  const std::vector<bf16> out = to_host(out_d);

  const std::string& out_file = o.text("--out");
  const std::vector<std::int64_t> out_shape = {T, Hq, 256};
  write_bf16(out_file, o.text("--out-dtype"), out_shape, out);
  if (want_lse) {
    const std::vector<float> lse = to_host(lse_d);
    npy::write(o.text("--lse"), npy::float32(), {T, Hq}, lse.data());
  }
  if (!status.ok())
    io.err << "uq decode: warning: the device masked bad data (" << status.describe()
           << "); tokens of bad blocks or lengths were treated as absent, a query with a NaN or an infinity "
              "gave a NaN row"
           << (status[Counter::bad_start_locs] ? ", sequences with a bad query_start_loc range were skipped" : "")
           << "\n";
  io.out << "uq decode: wrote " << out_file << " " << npy::shape_string(out_shape) << " "
         << bf16_output_type_name(o.text("--out-dtype")) << "; path "
         << path_name(plan.path()) << " on " << plan.device().name << ", " << plan.partitions() << " partitions x "
         << plan.tile_groups_per_partition() << " tile-groups, " << plan.launches_per_run()
         << (plan.launches_per_run() == 1 ? " kernel" : " kernels")
         << (several ? "; " + std::to_string(T) + " query tokens of " + std::to_string(B) + " sequences" +
                           (plan.path_reason().empty() ? std::string() : " (" + plan.path_reason() + ")")
                     : std::string())
         << (want_lse ? "; lse " + o.text("--lse") + " " + npy::shape_string({T, Hq}) + " float32" : std::string())
         << "; status " << status.describe() << "\n";
}

}  // namespace

Command decode_command() {
  Command c("decode", "decode attention over an UltraQuant cache (uq::decode)", run_decode);
  c.usage =
      "decode --q Q.npy --cache CACHE.npy --block-tables BT.npy\n"
      "                 --seq-lens SL.npy --qg G --out OUT.npy [--scale S]\n"
      "                 [--query-len QL | --query-start-loc QSL.npy]\n"
      "                 [--q-rotated] [--partitions P] [--backend auto|generic|native]\n"
      "                 [--out-dtype float32|bf16] [--lse LSE.npy] [--no-check]";
  c.description =
      "For each sequence b and query head h: out[b, h] = softmax(scale x q8 . k) V over the first "
      "SL[b] tokens of the sequence, whose token t lives in cache block BT[b, t / block_size] at "
      "position t % block_size. q8 is the E4M3 rounding of the rotated query; query head h reads KV "
      "head h / qg.\n\n"
      "The result holds bf16 values: written as float32 (exact) or, with --out-dtype bf16, as uint16 "
      "bits. --lse also writes lse[b, h] = log sum_t exp(scale x q8 . k_t) (natural log; -inf for a "
      "sequence without tokens), what merging this attention with another needs. Bad block ids or "
      "sequence lengths, and queries holding a NaN or an infinity, are an error (exit 2) unless "
      "--no-check is given; then the affected tokens are masked, as the library does on the device, a "
      "non-finite query head gives a NaN row (and a NaN lse), and the counts are reported on stderr.\n\n"
      "Several query tokens per sequence (speculative-decoding verification, MTP): with --query-len QL, "
      "Q holds T = B x QL rows, rows b x QL .. b x QL + QL - 1 being sequence b's new tokens; with "
      "--query-start-loc QSL.npy ([B + 1] int32 or int64: 0, non-decreasing, T), sequence b's are rows "
      "QSL[b] .. QSL[b + 1] - 1 (at most 16 of them). SL counts the new tokens too (their K and V are in "
      "the cache): query token j of n sees positions 0 .. SL[b] - n + j, a token that sees none gives a "
      "zero row (lse -inf). OUT is then [T, Hq, 256] and LSE [T, Hq]; these calls run the generic path "
      "(no tuned kernel has them yet).";
  c.options = {
      text_option("--q", "Q.npy",
                  "Queries [T, Hq, 256] (T = B, one per sequence, unless --query-len or --query-start-loc): float32 "
                  "(rounded to bf16) or uint16 (bf16 bits).",
                  true),
      kv_cache_input_option(),
      sequence_block_tables_option(),
      text_option("--seq-lens", "SL.npy", "Sequence lengths [B]: int32 or int64.", true),
      int_option("--qg", "G", "Query heads per KV head (6, 8 or 16): Hq = Hk x G.", 1, 1 << 20),
      text_option("--out", "OUT.npy", "Output [T, Hq, 256].", true),
      number_option("--scale", "S", "Softmax scale.", "0.0625"),
      flag_option("--q-rotated", "Q already holds WHT(q): only its E4M3 rounding is applied (see uq rotate-q)."),
      int_option("--partitions", "P", "Split-K partitions; 0 = the library's default choice.", 0, 4096, "0"),
      backend_option(),
      bf16_out_dtype_option("results"),
      text_option("--lse", "LSE.npy", "Also write the log-sum-exp of each query head's scores [T, Hq] float32.", false),
      int_option("--query-len", "QL", "Query tokens per sequence: Q holds B x QL rows (1 = one each).", 1, 16, "1"),
      text_option("--query-start-loc", "QSL.npy",
                  "Each sequence's first row of Q [B + 1]: int32 or int64 (instead of --query-len).", false),
      flag_option("--no-check",
                  "Mask bad block ids and sequence lengths (and give NaN rows for non-finite queries) instead of "
                  "failing; report the counts."),
  };
  c.options[4].required = true;
  return c;
}

}  // namespace cli
}  // namespace uq
