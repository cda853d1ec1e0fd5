// uq write-kv: quantise K and V into an UltraQuant cache file with uq::write_kv.
#include "cli/cache_update.hpp"
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"

#include "uq/write_kv.hpp"

#include <limits>
#include <ostream>

namespace uq {
namespace cli {
namespace {

const ShapePattern kCachePattern{"num_blocks", "block_size", "Hk", "slot_bytes"};

// The cache to update: the existing file (its header checked against K and the size
// options; its data is not read here), or a new zero-filled one made from the options.
CacheFile open_or_create_cache(const ParsedOptions& o, ShapeBindings& shapes) {
  const std::string& file = o.text("--cache");
  if (file_exists(file)) {
    CacheFile cache(file);
    if (!cache.dtype().is('u', 1)) throw InputError(file, "uint8", cache.dtype().name());
    shapes.match(cache.shape(), cache.dtype(), file, kCachePattern);
    check_cache_geometry(file, cache.shape());
    const char* dims[] = {"--num-blocks", "--block-size", nullptr, "--slot-bytes"};
    for (int d : {0, 1, 3}) {
      if (o.given(dims[d]) && o.integer(dims[d]) != cache.shape()[d])
        throw InputError(file, "extent " + std::to_string(d) + " = " + std::to_string(o.integer(dims[d])) +
                                   " (from " + dims[d] + ")",
                         "shape " + npy::shape_string(cache.shape()));
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
  const std::int64_t hk = shapes["Hk"];
  if (hk < 1 || hk > std::numeric_limits<int>::max())
    throw InputError(o.text("--k"), "shape [T, Hk, 256] with 1 <= Hk <= 2^31 - 1 (the KV heads of the new cache)",
                     "shape " + npy::shape_string({shapes["T"], hk, 256}));
  return CacheFile(file, {o.integer("--num-blocks"), bs, hk, sb});
}

void run_write_kv(const ParsedOptions& o, CommandIo& io) {
  ShapeBindings shapes;
  const Bf16Tensor k = load_bf16(o.text("--k"), ShapePattern{"T", "Hk", "256"}, shapes);
  const Bf16Tensor v = load_bf16(o.text("--v"), ShapePattern{"T", "Hk", "256"}, shapes);
  const std::vector<std::int64_t> slots = load_int64(o.text("--slots"), ShapePattern{"T"}, shapes);
  CacheFile cache = open_or_create_cache(o, shapes);
  const bool created = cache.created();

  const std::int64_t T = shapes["T"], Hk = shapes["Hk"];
  const std::vector<std::int64_t> cs = cache.shape();
  // Only the slots the tokens name are read, written by the library and written back.
  const CacheLayout layout = CacheLayout::ultraquant(Hk, cs[3]);
  const CompactSlots plan = compact_slots(slots, cs[0] * cs[1], layout);
  const Exec exec;
  auto k_d = to_device_3d("uq::cli::k", k.values.data(), T, Hk, 256);
  auto v_d = to_device_3d("uq::cli::v", v.values.data(), T, Hk, 256);
  auto slots_d = to_device_1d("uq::cli::slots", plan.token_slots);
  DeviceView4<std::uint8_t> slots_cache_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::cache_slots"),
                                          plan.compact_capacity / layout.block_slots, layout.block_slots, Hk, cs[3]);
  // The same memory as the device view where the device is the host (one copy, not two).
  auto slots_cache = Kokkos::create_mirror_view(slots_cache_d);
  cache.gather(plan, slots_cache.data());
  Kokkos::deep_copy(slots_cache_d, slots_cache);

  WriteKvConfig cfg;
  cfg.check = true;  // bad slots or non-finite rows fail the command; the file is left as it was
  uq::write_kv(exec, k_d, v_d, slots_d, slots_cache_d, cfg);

  Kokkos::deep_copy(slots_cache, slots_cache_d);
  cache.scatter_and_commit(plan, slots_cache.data());
  std::int64_t written = 0;
  for (std::int64_t s : slots) written += s >= 0 ? 1 : 0;
  io.out << "uq write-kv: " << (created ? "created " : "updated ") << o.text("--cache") << " "
         << npy::shape_string(cs) << " uint8: " << written << " of " << T << " tokens x " << Hk
         << " KV heads written\n";
}

}  // namespace

Command write_kv_command() {
  Command c("write-kv", "quantise K and V into an UltraQuant MXFP4 cache (uq::write_kv)", run_write_kv);
  c.usage =
      "write-kv --k K.npy --v V.npy --slots SLOTS.npy --cache CACHE.npy\n"
      "                   [--num-blocks N --block-size BS] [--slot-bytes SB]";
  c.description =
      "Each token's K (rotated by the Walsh-Hadamard transform) and V are quantised to FP4 E2M1 with "
      "one UE8M0 scale per 32 elements and stored in the cache slot SLOTS[t] = block * block_size + "
      "position; a negative slot skips the token.\n\n"
      "If CACHE.npy exists it is updated in place (its shape must be [num_blocks, block_size, Hk, "
      "slot_bytes] uint8 with Hk as in K): only the slots SLOTS names are read and rewritten, so the "
      "cost grows with T, not with the cache; the file must be writable and a regular file. Otherwise "
      "it is created zero-filled (sparse where the file system allows) from --num-blocks and "
      "--block-size, as a temporary renamed into place (see uq --help); the whole cache must fit in "
      "the free space of its file system (else exit 2). A slot beyond the cache or a non-finite K/V "
      "value is an error (exit 2) and leaves the file unchanged.";
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
  return c;
}

}  // namespace cli
}  // namespace uq
