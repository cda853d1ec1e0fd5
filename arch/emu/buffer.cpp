// Raw buffer loads and stores through host pointers, with the buffer range rules of
// spec §7.3: a dword component c is in range iff voffset + 4c < num_records (sub-dword
// accesses: voffset < num_records); soffset is not part of the check. Out-of-range
// components read 0 and are not written.
//
// Two deliberate differences from the hardware:
//  * a component that is in range but straddles num_records (a dword starting at
//    num_records - 2) reads and writes only its bytes below num_records, the others read 0:
//    the emulator never touches host memory past the range, which may not belong to the
//    kernel's buffer (the GPU would access those bytes);
//  * the hardware silently ignores the two low address bits of dword and wider accesses; the
//    emulator faults on such a misaligned access instead (it is always a kernel bug).
#include <cstring>
#include <string>

#include "state.hpp"

namespace uq::emu::detail {
namespace {

std::string misaligned_message(const Thread& me, const char* op, std::uint32_t voffset,
                               std::uint32_t soffset, Site at) {
  return "uq::emu: misaligned buffer access: " + who(me) + " " + op + " at " + where(at) +
         " with voffset " + std::to_string(voffset) + " and soffset " + std::to_string(soffset) +
         ": dword and wider accesses must be 4-byte aligned (the hardware would silently drop "
         "the low address bits)";
}

bool in_range(const BufferResource& r, std::uint32_t voffset, std::uint32_t byte_offset) {
  return static_cast<std::uint64_t>(voffset) + byte_offset < r.num_records;
}

void check_alignment(const Thread& me, const char* op, const BufferResource& r,
                     std::uint32_t voffset, std::uint32_t soffset, std::uint32_t size, Site at) {
  if (size < 4) return;
  const auto address = reinterpret_cast<std::uintptr_t>(r.base) + soffset + voffset;
  if (address % 4 != 0) fault(misaligned_message(me, op, voffset, soffset, at));
}

}  // namespace

void buffer_load(const BufferResource& r, std::uint32_t voffset, std::uint32_t soffset, void* dst,
                 std::uint32_t size, Site at) {
  const Thread& me = current_thread(at, "buffer_load");
  check_alignment(me, "buffer_load", r, voffset, soffset, size, at);
  auto* out = static_cast<unsigned char*>(dst);
  std::memset(out, 0, size);
  const std::uint32_t step = size < 4 ? size : 4;
  for (std::uint32_t c = 0; c < size; c += step) {
    if (!in_range(r, voffset, c)) continue;
    for (std::uint32_t b = c; b < c + step && in_range(r, voffset, b); ++b) {
      out[b] = r.base[soffset + voffset + b];
    }
  }
}

void buffer_store(const BufferResource& r, std::uint32_t voffset, std::uint32_t soffset,
                  const void* src, std::uint32_t size, Site at) {
  const Thread& me = current_thread(at, "buffer_store");
  check_alignment(me, "buffer_store", r, voffset, soffset, size, at);
  const auto* in = static_cast<const unsigned char*>(src);
  auto* base = const_cast<unsigned char*>(r.base);
  const std::uint32_t step = size < 4 ? size : 4;
  for (std::uint32_t c = 0; c < size; c += step) {
    if (!in_range(r, voffset, c)) continue;
    for (std::uint32_t b = c; b < c + step && in_range(r, voffset, b); ++b) {
      base[soffset + voffset + b] = in[b];
    }
  }
}

}  // namespace uq::emu::detail
