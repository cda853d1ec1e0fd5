// uq select: the top-k blocks of each score row with uq::select_blocks.
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"
#include "cli/output_file.hpp"

#include "uq/select_blocks.hpp"

#include <algorithm>
#include <limits>
#include <ostream>

namespace uq {
namespace cli {
namespace {

void run_select(const ParsedOptions& o, CommandIo& io) {
  ShapeBindings shapes;
  const std::string& scores_file = o.text("--scores");
  const std::string& sl_file = o.text("--seq-lens");
  const std::vector<float> scores = load_float32(scores_file, ShapePattern{"H", "rows", "S"}, shapes);
  const std::vector<std::int32_t> lens = load_int32(sl_file, ShapePattern{"R"}, shapes);

  const std::int64_t H = shapes["H"], rows = shapes["rows"], S = shapes["S"], R = shapes["R"];
  const std::int64_t query_len = o.integer("--query-len");
  std::int64_t want_rows = 0, heads_rows = 0;
  if (!multiply_extents(R, query_len, want_rows) || rows != want_rows)
    throw InputError(scores_file,
                     "shape [H, R*QL, S] with R*QL = " + product_text(R, query_len) + " (R from " + sl_file +
                         ", QL from --query-len)",
                     "shape " + npy::shape_string({H, rows, S}));
  if (S >= std::numeric_limits<std::int32_t>::max() || !multiply_extents(H, rows, heads_rows) ||
      heads_rows > std::numeric_limits<int>::max())
    throw InputError(scores_file, "fewer than 2^31 - 1 blocks per row and H x rows <= 2^31 - 1",
                     "shape " + npy::shape_string({H, rows, S}));

  // A row has at most S visible blocks, so positions k >= S are always -1 (spec §5:
  // fewer than k visible blocks pad with -1): the library picks min(k, S) and the rest
  // is padded here as the file is written, so the default k = 16 works on short
  // contexts too and memory stays within what the scores hold, whatever k is.
  const std::int64_t k = o.integer("--k");
  const std::int64_t picked = std::min(k, S);
  const std::string& out_file = o.text("--out");
  const std::vector<std::int64_t> out_shape = {H, rows, k};
  // Refused before any work when it cannot be stored (the padding makes it as large as
  // k asks, however small the scores are).
  require_space_for(out_file, npy::data_bytes(npy::int32(), out_shape, out_file),
                    "an output of " + npy::describe(npy::int32(), out_shape));
  SelectConfig cfg;
  cfg.query_len = static_cast<int>(query_len);
  cfg.check = !o.flag("--no-check");

  const Exec exec;
  auto scores_d = to_device_3d("uq::cli::scores", scores.data(), H, rows, S);
  auto lens_d = to_device_1d("uq::cli::seq_lens", lens);
  DeviceView3<std::int32_t> picked_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::selected"), H, rows,
                                     picked);
  const BlockSelector<Exec> selector(exec, cfg);
  // With check on, negative lengths or lengths beyond S blocks make run() throw (exit 2).
  selector.run(DeviceView3<const float>(scores_d), DeviceView1<const std::int32_t>(lens_d), picked_d);
  const Status status = selector.status();
  const std::vector<std::int32_t> top = to_host(picked_d);

  npy::StreamWriter writer(out_file, npy::int32(), out_shape);
  const std::vector<std::int32_t> padding(static_cast<std::size_t>(std::min<std::int64_t>(k - picked, 1 << 16)), -1);
  for (std::int64_t i = 0; i < heads_rows; ++i) {
    writer.append(top.data() + i * picked, static_cast<std::size_t>(picked) * 4);
    for (std::int64_t done = picked; done < k;) {
      const std::int64_t n = std::min<std::int64_t>(k - done, static_cast<std::int64_t>(padding.size()));
      writer.append(padding.data(), static_cast<std::size_t>(n) * 4);
      done += n;
    }
  }
  writer.commit();
  if (!status.ok())
    io.err << "uq select: warning: bad lengths were masked (" << status.describe()
           << "); they were clamped to [0, S x 128]\n";
  io.out << "uq select: wrote " << out_file << " " << npy::shape_string(out_shape) << " int32; status "
         << status.describe() << "\n";
}

}  // namespace

Command select_command() {
  Command c("select", "top-k blocks per score row (uq::select_blocks)", run_select);
  c.usage =
      "select --scores SCORES.npy --seq-lens SL.npy --query-len QL\n"
      "                 --out IDX.npy [--k K] [--no-check]";
  c.description =
      "For each index head h and query row i * QL + r (as uq score writes them): IDX[h, i * QL + r] "
      "holds the K blocks with the highest scores among the row's visible blocks b < ceil(max(SL[i] - "
      "QL + r + 1, 0) / 128), highest first; equal scores put the smaller block first, NaN counts as "
      "-inf, and a row with fewer than K visible blocks is padded with -1. Only the visible blocks' "
      "scores are read, so the NaN entries uq score leaves past a request's length never matter.\n\n"
      "A negative length or one beyond S blocks is an error (exit 2) unless --no-check is given; then "
      "it is clamped to [0, S x 128] and the counts are reported on stderr.";
  c.options = {
      text_option("--scores", "SCORES.npy", "Scores [H, R*QL, S] float32 (uq score).", true),
      text_option("--seq-lens", "SL.npy", "Total KV length of each request [R]: int32 or int64 (as given to uq score).",
                  true),
      int_option("--query-len", "QL", "Query rows per request, as given to uq score.", 1,
                 std::numeric_limits<int>::max()),
      text_option("--out", "IDX.npy", "Output [H, R*QL, K] int32: block indices (positions in the block table).", true),
      int_option("--k", "K", "Blocks to keep per row.", 1, std::numeric_limits<int>::max(), "16"),
      flag_option("--no-check", "Clamp bad lengths instead of failing; report the counts."),
  };
  c.options[2].required = true;
  return c;
}

}  // namespace cli
}  // namespace uq
