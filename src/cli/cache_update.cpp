#include "cli/cache_update.hpp"

#include "cli/failure.hpp"
#include "cli/temp_files.hpp"

#include "uq/nvfp4.hpp"

#include <algorithm>
#include <cstring>

namespace uq {
namespace cli {
namespace {

// The byte ranges of slot s (at most two), relative to the cache's first data byte.
int slot_ranges(const CacheLayout& layout, std::int64_t s, std::uint64_t offset[2], std::uint64_t bytes[2]) {
  if (layout.kind == CacheLayout::Kind::UltraQuant) {
    offset[0] = static_cast<std::uint64_t>(s) * static_cast<std::uint64_t>(layout.slot_row_bytes);
    bytes[0] = static_cast<std::uint64_t>(layout.slot_row_bytes);
    return 1;
  }
  const std::uint64_t page = static_cast<std::uint64_t>(s / nvfp4::kBlockTokens) * nvfp4::kPageBytes;
  const int pos = static_cast<int>(s % nvfp4::kBlockTokens);
  offset[0] = page + static_cast<std::uint64_t>(nvfp4::code_offset(pos, 0));
  bytes[0] = nvfp4::kCodeBytesPerToken;
  offset[1] = page + static_cast<std::uint64_t>(nvfp4::scale_offset(pos, 0));
  bytes[1] = nvfp4::kGroups;
  return 2;
}

}  // namespace

CacheLayout CacheLayout::ultraquant(std::int64_t num_kv_heads, std::int64_t slot_bytes) {
  CacheLayout l;
  l.kind = Kind::UltraQuant;
  l.slot_row_bytes = num_kv_heads * slot_bytes;
  l.block_slots = 16;
  return l;
}

CacheLayout CacheLayout::index() {
  CacheLayout l;
  l.kind = Kind::Index;
  l.block_slots = nvfp4::kBlockTokens;
  return l;
}

CompactSlots compact_slots(const std::vector<std::int64_t>& slots, std::int64_t capacity, const CacheLayout& layout) {
  std::vector<std::int64_t> valid;
  for (std::int64_t s : slots)
    if (s >= 0 && s < capacity) valid.push_back(s);
  std::sort(valid.begin(), valid.end());
  valid.erase(std::unique(valid.begin(), valid.end()), valid.end());

  CompactSlots plan;
  plan.distinct_slots = static_cast<std::int64_t>(valid.size());
  const std::int64_t blocks = (plan.distinct_slots + layout.block_slots - 1) / layout.block_slots;
  plan.compact_capacity = blocks * layout.block_slots;
  plan.compact_bytes = layout.kind == CacheLayout::Kind::UltraQuant
                           ? static_cast<std::uint64_t>(plan.compact_capacity) * layout.slot_row_bytes
                           : static_cast<std::uint64_t>(blocks) * nvfp4::kPageBytes;
  plan.token_slots.reserve(slots.size());
  for (std::int64_t s : slots) {
    if (s < 0) plan.token_slots.push_back(s);
    else if (s >= capacity) plan.token_slots.push_back(plan.compact_capacity);
    else plan.token_slots.push_back(std::lower_bound(valid.begin(), valid.end(), s) - valid.begin());
  }

  std::vector<SlotTransfer> t;
  for (std::size_t j = 0; j < valid.size(); ++j) {
    std::uint64_t file_off[2], file_bytes[2], compact_off[2], compact_bytes[2];
    const int n = slot_ranges(layout, valid[j], file_off, file_bytes);
    slot_ranges(layout, static_cast<std::int64_t>(j), compact_off, compact_bytes);
    for (int r = 0; r < n; ++r) t.push_back(SlotTransfer{file_off[r], compact_off[r], file_bytes[r]});
  }
  std::sort(t.begin(), t.end(),
            [](const SlotTransfer& a, const SlotTransfer& b) { return a.file_offset < b.file_offset; });
  for (const SlotTransfer& x : t) {
    if (!plan.transfers.empty()) {
      SlotTransfer& last = plan.transfers.back();
      if (last.file_offset + last.bytes == x.file_offset && last.compact_offset + last.bytes == x.compact_offset) {
        last.bytes += x.bytes;
        continue;
      }
    }
    plan.transfers.push_back(x);
  }
  return plan;
}

CacheFile::CacheFile(const std::string& path) : existing_(new npy::DataFile(path)) {
  shape_ = existing_->header().shape;
  dtype_ = existing_->header().dtype;
}

CacheFile::CacheFile(const std::string& path, const std::vector<std::int64_t>& shape) : shape_(shape) {
  dtype_ = npy::uint8();
  const std::vector<unsigned char> header = npy::encode_header(dtype_, shape);
  const std::uint64_t data_bytes = npy::data_bytes(dtype_, shape, path);
  created_.reset(new OutputFile(path, header.size() + data_bytes, "a new cache of " + npy::describe(dtype_, shape)));
  if (!created_->random_access())
    throw IoError(path, "cannot create a cache there: a cache is a regular file (it is updated in place)");
  created_->write(header.data(), header.size());
  created_->extend_with_zeros(header.size() + data_bytes);
  data_offset_ = header.size();
}

CacheFile::~CacheFile() = default;

void CacheFile::gather(const CompactSlots& plan, unsigned char* compact) const {
  // Compact slots past distinct_slots (the end of the last block) are never written or
  // copied back; zeros keep them defined.
  if (plan.compact_bytes) std::memset(compact, 0, plan.compact_bytes);
  if (!existing_) return;  // a new cache holds zeros
  for (const SlotTransfer& t : plan.transfers)
    existing_->read(t.file_offset, compact + t.compact_offset, static_cast<std::size_t>(t.bytes));
}

void CacheFile::scatter_and_commit(const CompactSlots& plan, const unsigned char* compact) {
  if (existing_) {
    const SignalHold hold;
    for (const SlotTransfer& t : plan.transfers)
      existing_->write(t.file_offset, compact + t.compact_offset, static_cast<std::size_t>(t.bytes));
    existing_->close();
    return;
  }
  for (const SlotTransfer& t : plan.transfers)
    created_->write_at(data_offset_ + t.file_offset, compact + t.compact_offset, static_cast<std::size_t>(t.bytes));
  created_->commit();
}

}  // namespace cli
}  // namespace uq
