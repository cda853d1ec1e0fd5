// uq write-kv: quantise K and V into an UltraQuant cache file with uq::write_kv.
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"

#include "uq/write_kv.hpp"

#include <ostream>

namespace uq {
namespace cli {
namespace {

// The cache to update: the existing file, checked against K and the size options,
// or a zero-filled one made from the size options.
npy::Array open_or_create_cache(const ParsedOptions& o, ShapeBindings& shapes, bool& created) {
  const std::string& file = o.text("--cache");
  const std::int64_t hk = shapes["Hk"];
  created = !file_exists(file);
  if (!created) {
    npy::Array cache = load_uint8(file, ShapePattern{"num_blocks", "block_size", "Hk", "slot_bytes"}, shapes);
    check_cache_geometry(file, cache.shape);
    const char* dims[] = {"--num-blocks", "--block-size", nullptr, "--slot-bytes"};
    for (int d : {0, 1, 3}) {
      if (o.given(dims[d]) && o.integer(dims[d]) != cache.shape[d])
        throw InputError(file, "extent " + std::to_string(d) + " = " + std::to_string(o.integer(dims[d])) +
                                   " (from " + dims[d] + ")",
                         "shape " + npy::shape_string(cache.shape));
    }
    return cache;
  }
  if (!o.given("--num-blocks") || !o.given("--block-size"))
    throw UsageError("the cache file '" + file + "' does not exist: give --num-blocks and --block-size to create it");
  const std::int64_t bs = o.integer("--block-size");
  const std::int64_t sb = o.integer("--slot-bytes");
  if (!valid_block_size(bs))
    throw UsageError("option --block-size: expected 16, 32, 64, 128 or 256, found " + std::to_string(bs));
  if (!valid_slot_bytes(sb))
    throw UsageError("option --slot-bytes: expected a multiple of 4 >= 272, found " + std::to_string(sb));
  npy::Array cache;
  cache.dtype = npy::uint8();
  cache.shape = {o.integer("--num-blocks"), bs, hk, sb};
  cache.data.assign(static_cast<std::size_t>(npy::element_count(cache.shape, file)), 0);
  return cache;
}

int run_write_kv(const ParsedOptions& o, CommandIo& io) {
  ShapeBindings shapes;
  const Bf16Tensor k = load_bf16(o.text("--k"), ShapePattern{"T", "Hk", "256"}, shapes);
  const Bf16Tensor v = load_bf16(o.text("--v"), ShapePattern{"T", "Hk", "256"}, shapes);
  const std::vector<std::int64_t> slots = load_int64(o.text("--slots"), ShapePattern{"T"}, shapes);
  bool created = false;
  npy::Array cache = open_or_create_cache(o, shapes, created);

  const std::int64_t T = shapes["T"], Hk = shapes["Hk"];
  const auto& cs = cache.shape;
  const Exec exec;
  auto k_d = to_device_3d("uq::cli::k", k.values.data(), T, Hk, 256);
  auto v_d = to_device_3d("uq::cli::v", v.values.data(), T, Hk, 256);
  auto slots_d = to_device_1d("uq::cli::slots", slots);
  auto cache_d = to_device_4d("uq::cli::cache", cache.data.data(), cs[0], cs[1], cs[2], cs[3]);

  WriteKvConfig cfg;
  cfg.check = true;  // bad slots or non-finite rows fail the command; the file is left as it was
  uq::write_kv(exec, k_d, v_d, slots_d, cache_d, cfg);

  cache.data = to_host(cache_d);
  npy::write(o.text("--cache"), cache.dtype, cache.shape, cache.data.data());
  std::int64_t written = 0;
  for (std::int64_t s : slots) written += s >= 0 ? 1 : 0;
  io.out << "uq write-kv: " << (created ? "created " : "updated ") << o.text("--cache") << " "
         << npy::shape_string(cache.shape) << " uint8: " << written << " of " << T << " tokens x " << Hk
         << " KV heads written\n";
  return kExitOk;
}

}  // namespace

Command write_kv_command() {
  Command c;
  c.name = "write-kv";
  c.summary = "quantise K and V into an UltraQuant MXFP4 cache (uq::write_kv)";
  c.usage =
      "write-kv --k K.npy --v V.npy --slots SLOTS.npy --cache CACHE.npy\n"
      "                   [--num-blocks N --block-size BS] [--slot-bytes SB]";
  c.description =
      "Each token's K (rotated by the Walsh-Hadamard transform) and V are quantised to FP4 E2M1 with "
      "one UE8M0 scale per 32 elements and stored in the cache slot SLOTS[t] = block * block_size + "
      "position; a negative slot skips the token.\n\n"
      "If CACHE.npy exists it is updated in place (its shape must be [num_blocks, block_size, Hk, "
      "slot_bytes] uint8 with Hk as in K); otherwise it is created zero-filled from --num-blocks and "
      "--block-size. A slot beyond the cache or a non-finite K/V value is an error (exit 2) and leaves "
      "the file unchanged.";
  c.options = {
      text_option("--k", "K.npy", "Keys [T, Hk, 256]: float32 (rounded to bf16) or uint16 (bf16 bits).", true),
      text_option("--v", "V.npy", "Values [T, Hk, 256], same dtype rules and shape as K.", true),
      text_option("--slots", "SLOTS.npy", "Slot of each token [T]: int32 or int64; negative = skip.", true),
      text_option("--cache", "CACHE.npy",
                  "The cache [num_blocks, block_size, Hk, slot_bytes] uint8: updated if it exists, else created.",
                  true),
      int_option("--num-blocks", "N", "Blocks of a new cache (must match an existing one if given).", 1,
                 std::int64_t(1) << 40),
      int_option("--block-size", "BS", "Tokens per block of a new cache: 16, 32, 64, 128 or 256.", 1, 256),
      int_option("--slot-bytes", "SB", "Bytes per token and KV head of a new cache: a multiple of 4 >= 272.", 1,
                 1 << 20, "272"),
  };
  c.run = run_write_kv;
  return c;
}

}  // namespace cli
}  // namespace uq
