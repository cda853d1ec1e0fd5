// Updating a cache file (write-kv, write-index) at a cost that grows with the tokens
// written, not with the cache: the slots the tokens name are read from the file into a
// compact cache of the same layout (one slot per distinct slot id, in whole blocks), the
// library's writer runs on that, and those slots are written back. The rest of the file
// is never read or written. A new cache is a temporary file of zeros made sparse where
// the file system allows (nothing is written but the slots), renamed into place.
#pragma once

#include "cli/npy.hpp"
#include "cli/output_file.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace uq {
namespace cli {

// Where a cache slot's bytes lie in the cache data (the same rule for the file and for
// the compact cache: only the number of blocks differs).
struct CacheLayout {
  enum class Kind { UltraQuant, Index } kind = Kind::UltraQuant;
  std::int64_t slot_row_bytes = 0;  // UltraQuant: Hk x slot_bytes, the slot's bytes (all heads)
  std::int64_t block_slots = 0;     // slots per block of the compact cache

  // [num_blocks, block_size, Hk, slot_bytes]: slot s is row s of Hk x slot_bytes bytes.
  // The compact cache has blocks of 16 slots (the smallest block size the writer takes).
  static CacheLayout ultraquant(std::int64_t num_kv_heads, std::int64_t slot_bytes);
  // [num_blocks, 9216] (nvfp4-index.md §2): slot s is position s % 128 of page s / 128,
  // its 64 code bytes in the page's first 8192 bytes and its 8 scale bytes after them.
  static CacheLayout index();
};

// One copy between the file's data and the compact cache.
struct SlotTransfer {
  std::uint64_t file_offset = 0;     // from the first data byte of the file
  std::uint64_t compact_offset = 0;  // from the first byte of the compact cache
  std::uint64_t bytes = 0;
};

struct CompactSlots {
  // Each token's slot in the compact cache: negative (skipped) as given; a slot beyond
  // the file's cache becomes compact_capacity, beyond the compact cache too, so the
  // writer counts it as bad exactly as it would have on the whole cache.
  std::vector<std::int64_t> token_slots;
  std::int64_t distinct_slots = 0;    // valid slot ids, each once
  std::int64_t compact_capacity = 0;  // slots of the compact cache: distinct_slots in whole blocks
  std::uint64_t compact_bytes = 0;
  std::vector<SlotTransfer> transfers;  // ascending file offsets, adjacent ones merged
};

// capacity: the slots of the file's cache (num_blocks x block_size).
CompactSlots compact_slots(const std::vector<std::int64_t>& slots, std::int64_t capacity, const CacheLayout& layout);

// The cache file being updated: an existing one (read and written in place) or a new
// one (a zero-filled temporary until commit()).
class CacheFile {
 public:
  // Opens an existing file for an in-place update (npy::DataFile's errors).
  explicit CacheFile(const std::string& path);
  // Creates a new zero-filled uint8 cache of `shape` (OutputFile's rules and errors,
  // among them the check that the whole cache fits on its file system).
  CacheFile(const std::string& path, const std::vector<std::int64_t>& shape);
  ~CacheFile();
  CacheFile(CacheFile&&) = default;
  CacheFile& operator=(CacheFile&&) = default;

  bool created() const { return created_ != nullptr; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  const npy::DType& dtype() const { return dtype_; }

  // Fills the compact cache (compact_bytes at `compact`) with the slots' bytes.
  void gather(const CompactSlots& plan, unsigned char* compact) const;
  // Writes the slots' bytes back and completes the file: an existing file is written
  // with the interrupt signals held back (an update is never torn by Ctrl-C); a new
  // one is renamed into place.
  void scatter_and_commit(const CompactSlots& plan, const unsigned char* compact);

 private:
  std::unique_ptr<npy::DataFile> existing_;
  std::unique_ptr<OutputFile> created_;
  std::uint64_t data_offset_ = 0;  // new file: bytes of the header
  std::vector<std::int64_t> shape_;
  npy::DType dtype_;
};

}  // namespace cli
}  // namespace uq
