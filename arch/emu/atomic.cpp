// Global atomics of isa.hpp. The emulator runs one lane at a time on one OS thread, so a
// lane's read-modify-write cannot interleave with another lane's; the host atomic only keeps
// the operation atomic for host threads that share the memory (a test reading counters
// while a launch runs on another thread).
#include <string>

#include "state.hpp"

namespace uq::emu::detail {
namespace {

std::string misaligned_atomic_message(const Thread& me, const void* addr, Site at) {
  return "uq::emu: misaligned atomic: " + who(me) + " atomic_add_u64 at " + where(at) +
         " on address " + std::to_string(reinterpret_cast<std::uintptr_t>(addr)) +
         ": 64-bit global atomics must be aligned to 8 bytes";
}

}  // namespace

unsigned long long atomic_add_u64(unsigned long long* addr, unsigned long long value, Site at) {
  const Thread& me = current_thread(at, "atomic_add_u64");
  if (reinterpret_cast<std::uintptr_t>(addr) % 8 != 0) {
    fault(misaligned_atomic_message(me, addr, at));
  }
  return __atomic_fetch_add(addr, value, __ATOMIC_RELAXED);
}

}  // namespace uq::emu::detail
