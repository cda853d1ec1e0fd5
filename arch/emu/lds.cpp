// LDS: one arena per launch (reset and poisoned for every workgroup), bounds and alignment
// checks, ds_read_b64_tr_b16, and the race detector.
//
// Why a race detector: the emulator runs the lanes of a wave one after another between
// rendezvous, whereas the hardware runs them in lock step. A kernel that lets a lane read
// LDS another lane writes without a rendezvous (barrier, wave_barrier or any cross-lane
// operation) in between would see different data here and on the GPU. Every LDS byte
// remembers its last writer and last reader with their ordering clocks (wave epoch, barriers
// passed); an access is ordered after a previous one by another lane iff a rendezvous of
// their common wave, or a workgroup barrier, lies between them. Unordered accesses by
// different lanes where one writes fault (rewriting identical bytes is tolerated).
#include <cstring>
#include <string>

#include "state.hpp"

namespace uq::emu::detail {
namespace {

constexpr std::uint32_t kAlign = 16;

bool ordered(const LdsAccess& before, const Thread& me) {
  if (before.tid == kNoThread || before.tid == me.tid) return true;
  const Wave& w = *me.wave;
  if (before.tid / kLanes == w.index) return before.epoch < w.epoch;
  return before.barriers < w.barriers;
}

std::string thread_name(const Launch& L, std::uint16_t tid) {
  return "lane " + std::to_string(tid % kLanes) + " of wave " + std::to_string(tid / kLanes) +
         (L.waves.size() > 1 ? " (work-item " + std::to_string(tid) + ")" : "");
}

std::string race_message(const Launch& L, const Thread& me, bool writing, std::uint32_t addr,
                         Site at, const LdsAccess& other, bool other_wrote) {
  return std::string("uq::emu: LDS race: ") + who(me) + (writing ? " writes" : " reads") +
         " LDS byte " + std::to_string(addr) + " at " + where(at) + ", which " +
         thread_name(L, other.tid) + (other_wrote ? " wrote" : " read") + " at " +
         where(Site{other.file, other.line}) +
         " with no barrier, wave_barrier or cross-lane operation in between (lanes run one "
         "after another in the emulator, in lock step on the GPU)";
}

std::string bounds_message(const Thread& me, const char* op, std::uint32_t addr,
                           std::uint32_t size, std::uint32_t used, Site at) {
  return "uq::emu: LDS out of bounds: " + who(me) + " " + op + " of " + std::to_string(size) +
         " bytes at address " + std::to_string(addr) + " at " + where(at) + "; the kernel has " +
         std::to_string(used) + " bytes of LDS (lds_allocate)";
}

std::string align_message(const Thread& me, const char* op, std::uint32_t addr,
                          std::uint32_t align, Site at) {
  return "uq::emu: misaligned LDS access: " + who(me) + " " + op + " at address " +
         std::to_string(addr) + " at " + where(at) + " must be aligned to " +
         std::to_string(align) + " bytes";
}

std::string overflow_message(std::uint32_t used, std::uint32_t bytes, Site at) {
  return "uq::emu: lds_allocate<" + std::to_string(bytes) + "> at " + where(at) +
         " exceeds the 163840 bytes of LDS a workgroup may use (" + std::to_string(used) +
         " already allocated)";
}

void check_range(const Thread& me, const char* op, std::uint32_t addr, std::uint32_t size,
                 std::uint32_t align, Site at) {
  const Launch& L = launch_state();
  if (static_cast<std::uint64_t>(addr) + size > L.lds_used) {
    fault(bounds_message(me, op, addr, size, L.lds_used, at));
  }
  if (addr % align != 0) fault(align_message(me, op, addr, align, at));
}

void record(LdsAccess& slot, const Thread& me, Site at) {
  slot.file = at.file;
  slot.line = at.line;
  slot.epoch = me.wave->epoch;
  slot.barriers = me.wave->barriers;
  slot.tid = static_cast<std::uint16_t>(me.tid);
}

void check_read(Launch& L, const Thread& me, std::uint32_t addr, std::uint32_t size, Site at) {
  if (!L.config.detect_lds_races) return;
  for (std::uint32_t i = 0; i < size; ++i) {
    const LdsAccess& w = L.lds_last_write[addr + i];
    if (!ordered(w, me)) fault(race_message(L, me, false, addr + i, at, w, true));
    record(L.lds_last_read[addr + i], me, at);
  }
}

void check_write(Launch& L, const Thread& me, std::uint32_t addr, const unsigned char* bytes,
                 std::uint32_t size, Site at) {
  if (!L.config.detect_lds_races) return;
  for (std::uint32_t i = 0; i < size; ++i) {
    const bool same_value = L.lds[addr + i] == bytes[i];
    const LdsAccess& w = L.lds_last_write[addr + i];
    if (!ordered(w, me) && !same_value) fault(race_message(L, me, true, addr + i, at, w, true));
    const LdsAccess& r = L.lds_last_read[addr + i];
    if (!ordered(r, me) && !same_value) fault(race_message(L, me, true, addr + i, at, r, false));
    record(L.lds_last_write[addr + i], me, at);
  }
}

// ds_read_b64_tr_b16 rendezvous: every lane's address, every lane's result.
struct TransposeOperand {
  std::uint32_t addr;
  Site at;
};

void transpose_compute(Wave& w) {
  Launch& L = launch_state();
  std::uint16_t loaded[kLanes][4];
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    const auto& op = *static_cast<const TransposeOperand*>(w.operand[l]);
    const Thread& src = *w.lanes[l];
    check_range(src, "ds_read_b64_tr_b16", op.addr, 8, 8, op.at);
    check_read(L, src, op.addr, 8, op.at);
    std::memcpy(loaded[l], &L.lds[op.addr], 8);
  }
  if (L.config.profile_lds_banks) {
    std::uint32_t addr[kLanes];
    for (std::uint32_t l = 0; l < kLanes; ++l) addr[l] = static_cast<const TransposeOperand*>(w.operand[l])->addr;
    lds_bank_record_wave(L, static_cast<const TransposeOperand*>(w.operand[0])->at, "ds_read_tr", addr, 8);
  }
  // R[16G + d][j] = W[16G + 4j + (d >> 2)][d & 3]
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    const std::uint32_t group = l & ~15u, d = l & 15u;
    gfx950::i16x4 r;
    for (std::uint32_t j = 0; j < 4; ++j) {
      r[j] = static_cast<std::int16_t>(loaded[group + 4 * j + (d >> 2)][d & 3]);
    }
    *static_cast<gfx950::i16x4*>(w.result[l]) = r;
  }
}

}  // namespace

std::uint32_t lds_allocate(const void* key, std::uint32_t bytes, Site at) {
  current_thread(at, "lds_allocate");
  Launch& L = launch_state();
  for (const LdsAllocation& a : L.lds_allocations) {
    if (a.key == key) return a.offset;
  }
  const std::uint32_t offset = (L.lds_used + kAlign - 1) / kAlign * kAlign;
  if (static_cast<std::uint64_t>(offset) + bytes > gfx950::kMaxLdsBytes) {
    fault(overflow_message(L.lds_used, bytes, at));
  }
  L.lds_allocations.push_back({key, offset, bytes});
  L.lds_used = offset + bytes;
  // The arena grows with the allocations (new bytes poisoned like the rest).
  L.lds.resize(L.lds_used, L.config.lds_poison);
  if (L.config.detect_lds_races) {
    L.lds_last_write.resize(L.lds_used);
    L.lds_last_read.resize(L.lds_used);
  }
  return offset;
}

void lds_read(std::uint32_t addr, void* dst, std::uint32_t size, Site at) {
  const Thread& me = current_thread(at, "lds_load");
  Launch& L = launch_state();
  check_range(me, "lds_load", addr, size, size, at);
  check_read(L, me, addr, size, at);
  lds_bank_record_lane(L, me, at, "ds_read", addr, size);
  std::memcpy(dst, &L.lds[addr], size);
}

void lds_write(std::uint32_t addr, const void* src, std::uint32_t size, Site at) {
  const Thread& me = current_thread(at, "lds_store");
  Launch& L = launch_state();
  check_range(me, "lds_store", addr, size, size, at);
  check_write(L, me, addr, static_cast<const unsigned char*>(src), size, at);
  lds_bank_record_lane(L, me, at, "ds_write", addr, size);
  std::memcpy(&L.lds[addr], src, size);
}

gfx950::i16x4 ds_read_b64_tr_b16(std::uint32_t addr, Site at) {
  const TransposeOperand operand{addr, at};
  gfx950::i16x4 result;
  rendezvous("ds_read_b64_tr_b16", at, &transpose_compute, &operand, &result);
  return result;
}

}  // namespace uq::emu::detail
