// uq write-index: quantise index keys into an NVFP4 index cache file with
// uq::write_index_keys.
#include "cli/cache_update.hpp"
#include "cli/commands.hpp"
#include "cli/device_arrays.hpp"
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"

#include "uq/nvfp4.hpp"
#include "uq/write_index_keys.hpp"

#include <ostream>

namespace uq {
namespace cli {
namespace {

const ShapePattern kCachePattern{"num_blocks", std::to_string(nvfp4::kPageBytes)};

// The cache to update: the existing file (its header checked against --num-blocks when
// given; its data is not read here), or a new zero-filled one of --num-blocks pages.
CacheFile open_or_create_index_cache(const ParsedOptions& o, ShapeBindings& shapes) {
  const std::string& file = o.text("--cache");
  if (file_exists(file)) {
    CacheFile cache(file);
    if (!cache.dtype().is('u', 1)) throw InputError(file, "uint8", cache.dtype().name());
    shapes.match(cache.shape(), cache.dtype(), file, kCachePattern);
    if (o.given("--num-blocks") && o.integer("--num-blocks") != cache.shape()[0])
      throw InputError(file, "extent 0 = " + std::to_string(o.integer("--num-blocks")) + " (from --num-blocks)",
                       "shape " + npy::shape_string(cache.shape()));
    return cache;
  }
  if (!o.given("--num-blocks"))
    throw UsageError("the cache file '" + file + "' does not exist: give --num-blocks to create it");
  return CacheFile(file, {o.integer("--num-blocks"), nvfp4::kPageBytes});
}

// Runs the writer on keys of element type T (float as given, or bf16 bits) over the
// slots the tokens name, then writes them back into the file.
template <class T>
void write_keys(const std::vector<T>& keys, std::int64_t tokens, const std::vector<std::int64_t>& slots,
                CacheFile& cache) {
  const CompactSlots plan = compact_slots(slots, cache.shape()[0] * nvfp4::kBlockTokens, CacheLayout::index());
  const Exec exec;
  auto keys_d = to_device_2d("uq::cli::index_keys", keys.data(), tokens, nvfp4::kHeadDim);
  auto slots_d = to_device_1d("uq::cli::slots", plan.token_slots);
  DeviceView2<std::uint8_t> pages_d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::cli::index_pages"),
                                    plan.compact_capacity / nvfp4::kBlockTokens, nvfp4::kPageBytes);
  // The same memory as the device view where the device is the host (one copy, not two).
  auto pages = Kokkos::create_mirror_view(pages_d);
  cache.gather(plan, pages.data());
  Kokkos::deep_copy(pages_d, pages);
  IndexWriterConfig cfg;
  cfg.check = true;  // bad slots or non-finite keys fail the command; the file is left as it was
  uq::write_index_keys(exec, DeviceView2<const T>(keys_d), DeviceView1<const std::int64_t>(slots_d), pages_d, cfg);
  Kokkos::deep_copy(pages, pages_d);
  cache.scatter_and_commit(plan, pages.data());
}

void run_write_index(const ParsedOptions& o, CommandIo& io) {
  ShapeBindings shapes;
  const std::string& k_file = o.text("--k");
  // float32 keys go to the writer unrounded (it takes float keys); uint16 are bf16 bits.
  const npy::Array k = npy::read(k_file);
  if (!k.dtype.is('f', 4) && !k.dtype.is('u', 2))
    throw InputError(k_file, "float32 (used as is) or uint16 (bf16 bits)", k.dtype.name());
  shapes.match(k, k_file, ShapePattern{"T", std::to_string(nvfp4::kHeadDim)});
  const std::vector<std::int64_t> slots = load_int64(o.text("--slots"), ShapePattern{"T"}, shapes);
  CacheFile cache = open_or_create_index_cache(o, shapes);
  const bool created = cache.created();

  const std::int64_t T = shapes["T"];
  if (k.dtype.is('f', 4)) write_keys(to_float32(k, k_file), T, slots, cache);
  else write_keys(to_bf16(k, k_file), T, slots, cache);
  std::int64_t written = 0;
  for (std::int64_t s : slots) written += s >= 0 ? 1 : 0;
  io.out << "uq write-index: " << (created ? "created " : "updated ") << o.text("--cache") << " "
         << npy::shape_string(cache.shape()) << " uint8: " << written << " of " << T << " tokens written\n";
}

}  // namespace

Command write_index_command() {
  Command c("write-index", "quantise keys into an NVFP4 index cache (uq::write_index_keys)", run_write_index);
  c.usage =
      "write-index --k K.npy --slots SLOTS.npy --cache ICACHE.npy\n"
      "                      [--num-blocks N]";
  c.description =
      "Each token's index key (128 dims) is quantised to NVFP4: per group of 16 dims one E4M3 scale "
      "e4m3(max|x| / 6) and 16 FP4 E2M1 codes (nearest, ties to even). Token t goes to slot SLOTS[t] = "
      "block * 128 + position; a negative slot skips the token. A block is one page of 9216 bytes: the "
      "128 tokens' codes (64 bytes each), then their scales (8 bytes each).\n\n"
      "If ICACHE.npy exists it is updated in place (its shape must be [num_blocks, 9216] uint8): only "
      "the slots SLOTS names are read and rewritten, so the cost grows with T, not with the cache; "
      "the file must be writable and a regular file. Otherwise it is created zero-filled (sparse "
      "where the file system allows) with --num-blocks pages, as a temporary renamed into place (see "
      "uq --help); the whole cache must fit in the free space of its file system (else exit 2). A "
      "slot beyond the cache or a non-finite key value is an error (exit 2) and leaves the file "
      "unchanged.";
  c.options = {
      text_option("--k", "K.npy",
                  "Index keys [T, 128]: float32 (quantised as given, no bf16 rounding) or uint16 (bf16 bits).", true),
      text_option("--slots", "SLOTS.npy", "Slot of each token [T]: int32 or int64; negative = skip.", true),
      text_option("--cache", "ICACHE.npy",
                  "The index cache [num_blocks, 9216] uint8: updated if it exists, else created.", true),
      int_option("--num-blocks", "N",
                 "Pages (blocks of 128 tokens) of a new cache (must match an existing one if given).", 1,
                 std::int64_t(1) << 40),
  };
  return c;
}

}  // namespace cli
}  // namespace uq
