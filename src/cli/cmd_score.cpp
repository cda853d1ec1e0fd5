// uq score: per-block maxima of q.k over an NVFP4 index cache with uq::ScorePlan.
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"
#include "cli/shared_options.hpp"

#include "uq/nvfp4.hpp"
#include "uq/score.hpp"

#include <limits>
#include <ostream>

namespace uq {
namespace cli {
namespace {

constexpr std::int64_t kMaxColumns = 32;  // H x QL per request (spec nvfp4-index.md §4)

// The checks the library would make on q's shape, made here first so that the
// message names the file.
void check_query_shape(const std::string& q_file, const std::string& sl_file, const ShapeBindings& shapes,
                       std::int64_t query_len) {
  const std::int64_t rows = shapes["rows"], H = shapes["H"], R = shapes["R"];
  const std::string found = "shape " + npy::shape_string({rows, H, nvfp4::kHeadDim});
  if (H != 1 && H != 2 && H != 4)
    throw InputError(q_file, "shape [R*QL, H, 128] with H (index heads) in {1, 2, 4}", found);
  if (H * query_len > kMaxColumns)
    throw InputError(q_file,
                     "H x QL <= 32 with QL = " + std::to_string(query_len) + " (from --query-len)",
                     found + ": " + std::to_string(H) + " x " + std::to_string(query_len) + " = " +
                         std::to_string(H * query_len));
  if (rows != R * query_len)
    throw InputError(q_file,
                     "shape [R*QL, H, 128] with R*QL = " + std::to_string(R) + " x " + std::to_string(query_len) +
                         " = " + std::to_string(R * query_len) + " (R from " + sl_file + ", QL from --query-len)",
                     found);
}

void run_score(const ParsedOptions& o, CommandIo& io) {
  ShapeBindings shapes;
  const std::string& q_file = o.text("--q");
  const std::string& bt_file = o.text("--block-tables");
  const std::string& sl_file = o.text("--seq-lens");
  const std::vector<std::uint8_t> q =
      load_e4m3(q_file, ShapePattern{"rows", "H", std::to_string(nvfp4::kHeadDim)}, shapes);
  const npy::Array cache =
      load_uint8(o.text("--cache"), ShapePattern{"num_blocks", std::to_string(nvfp4::kPageBytes)}, shapes);
  const std::vector<std::int32_t> tables = load_int32(bt_file, ShapePattern{"R", "max_blocks"}, shapes);
  const std::vector<std::int32_t> lens = load_int32(sl_file, ShapePattern{"R"}, shapes);

  const std::int64_t query_len = o.integer("--query-len");
  check_query_shape(q_file, sl_file, shapes, query_len);
  const std::int64_t rows = shapes["rows"], H = shapes["H"], R = shapes["R"], MB = shapes["max_blocks"];
  if (MB > std::numeric_limits<int>::max() || R > std::numeric_limits<int>::max())
    throw InputError(bt_file, "fewer than 2^31 rows and columns", "shape " + npy::shape_string({R, MB}));

  ScoreConfig cfg;
  cfg.query_len = static_cast<int>(query_len);
  cfg.init_blocks = static_cast<int>(o.integer("--init-blocks"));
  cfg.local_blocks = static_cast<int>(o.integer("--local-blocks"));
  cfg.backend = parse_backend(o.text("--backend"));
  cfg.check = !o.flag("--no-check");
  ScoreShape shape;
  shape.max_reqs = static_cast<int>(R);
  shape.query_len = cfg.query_len;
  shape.heads = static_cast<int>(H);
  shape.max_blocks = static_cast<int>(MB);

  const Exec exec;
  auto q_d = to_device_3d("uq::cli::q", q.data(), rows, H, nvfp4::kHeadDim);
  auto cache_d = to_device_2d("uq::cli::index_cache", cache.data.data(), cache.shape[0], cache.shape[1]);
  auto tables_d = to_device_2d("uq::cli::block_tables", tables.data(), R, MB);
  auto lens_d = to_device_1d("uq::cli::seq_lens", lens);
  // The kernel leaves the blocks past each request's length alone: NaN marks them in
  // the file (no score it writes is NaN for in-contract inputs).
  DeviceView3<float> scores_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::scores"), H, rows, MB);
  Kokkos::deep_copy(exec, scores_d, std::numeric_limits<float>::quiet_NaN());

  const ScorePlan<Exec> plan(exec, shape, cfg);
  // With check on, bad block ids or seq lens make run() throw uq::Error (exit 2).
  plan.run(DeviceView3<const std::uint8_t>(q_d), DeviceView2<const std::uint8_t>(cache_d),
           DeviceView2<const std::int32_t>(tables_d), DeviceView1<const std::int32_t>(lens_d), scores_d);
  const Status status = plan.status();
  const std::vector<float> scores = to_host(scores_d);

  const std::string& out_file = o.text("--out");
  const std::vector<std::int64_t> out_shape = {H, rows, MB};
  npy::write(out_file, npy::float32(), out_shape, scores.data());
  if (!status.ok())
    io.err << "uq score: warning: the device masked bad data (" << status.describe()
           << "); lengths were clamped to [0, max_blocks x 128] and out-of-range pages read as empty blocks\n";
  io.out << "uq score: wrote " << out_file << " " << npy::shape_string(out_shape) << " float32; path "
         << path_name(plan.path()) << " on " << plan.device().name << "; status " << status.describe() << "\n";
}

}  // namespace

Command score_command() {
  Command c("score", "per-block index scores over an NVFP4 index cache (uq::score)", run_score);
  c.usage =
      "score --q Q.npy --cache ICACHE.npy --block-tables BT.npy\n"
      "                --seq-lens SL.npy --query-len QL --init-blocks I\n"
      "                --local-blocks L --out SCORES.npy\n"
      "                [--backend auto|generic|native] [--no-check]";
  c.description =
      "For request i (R = len(SL) requests), its query row r < QL (the r-th of its last QL tokens, "
      "row i * QL + r of Q) and index head h: SCORES[h, i * QL + r, b] = the maximum over the tokens of "
      "block b that the row may see (causally) of q . k, where q is Q[i * QL + r, h] in E4M3 and k the "
      "dequantised key (uq write-index). Block b of request i is page BT[i, b] of the cache and holds "
      "its tokens 128 b .. 128 b + 127.\n\n"
      "The first I blocks score 1e30 and the last L visible blocks of each row 1e29 (always kept), "
      "blocks the row cannot see score -inf, and blocks past the request's length (ceil(SL[i] / 128) "
      "and beyond) are NaN. The scores only rank blocks (uq select).\n\n"
      "Bad block ids or sequence lengths are an error (exit 2) unless --no-check is given; then, as "
      "the library does on the device, a length is clamped to [0, max_blocks x 128], a block whose "
      "page id is outside the cache counts as a block without tokens (-inf, or its sentinel), and the "
      "counts are reported on stderr.";
  c.options = {
      text_option("--q", "Q.npy",
                  "Queries [R*QL, H, 128], H in {1, 2, 4}: uint8 (E4M3 bits) or float32 (rounded to E4M3, "
                  "nearest even, saturating).",
                  true),
      text_option("--cache", "ICACHE.npy", "The index cache [num_blocks, 9216] uint8 (uq write-index).", true),
      text_option("--block-tables", "BT.npy", "Block table [R, max_blocks]: int32 or int64.", true),
      text_option("--seq-lens", "SL.npy", "Total KV length of each request, query tokens included [R]: int32 or int64.",
                  true),
      int_option("--query-len", "QL", "Query rows per request: H x QL <= 32.", 1, std::numeric_limits<int>::max()),
      int_option("--init-blocks", "I", "Leading blocks every row keeps (score 1e30).", 0,
                 std::numeric_limits<int>::max()),
      int_option("--local-blocks", "L", "Trailing visible blocks every row keeps (score 1e29).", 0,
                 std::numeric_limits<int>::max()),
      text_option("--out", "SCORES.npy", "Output [H, R*QL, max_blocks] float32.", true),
      backend_option(),
      flag_option("--no-check", "Mask bad block ids and sequence lengths instead of failing; report the counts."),
  };
  for (int i : {4, 5, 6}) c.options[i].required = true;
  return c;
}

}  // namespace cli
}  // namespace uq
