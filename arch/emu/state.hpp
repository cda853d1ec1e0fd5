// The emulator's internal state: lanes, waves, the running workgroup and the launch.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "emulator.hpp"
#include "fiber.hpp"
#include "gfx950/isa.hpp"

namespace uq::emu::detail {

constexpr std::uint32_t kLanes = 64;
constexpr std::uint32_t kMaxWaves = 16;  // 1024 work-items per workgroup
constexpr std::uint16_t kNoThread = 0xFFFF;

struct Wave;

// One lane: a fiber running the kernel body.
struct Thread {
  Fiber fiber;
  std::uint32_t tid = 0;   // work-item index in the workgroup
  std::uint32_t lane = 0;  // 0..63
  Wave* wave = nullptr;
  bool blocked = false;    // waiting in a rendezvous
  bool finished = false;   // returned from the kernel body
  const char* last_op = nullptr;  // the last rendezvous it passed, for messages
  Site last_site{nullptr, 0};
};

// A rendezvous of the wave's 64 lanes: each arriving lane leaves a pointer to its operands
// and to where its result goes; the last one calls `compute` for all.
using Compute = void (*)(Wave& wave);

struct Wave {
  std::uint32_t index = 0;
  Thread* lanes[kLanes] = {};
  // the rendezvous being gathered
  std::uint32_t arrived = 0;
  std::uint64_t arrived_mask = 0;  // bit l: lane l is waiting here
  const char* op = nullptr;
  Site site{nullptr, 0};
  Compute compute = nullptr;
  const void* operand[kLanes] = {};
  void* result[kLanes] = {};
  bool hold = false;  // set by compute: keep the lanes blocked (a barrier waits for waves)
  // lanes that returned from the kernel
  std::uint32_t finished_lanes = 0;
  std::uint32_t first_finished_lane = 0;
  // ordering for the LDS race detector: rendezvous passed (x2, see lds.cpp), barriers passed
  std::uint32_t epoch = 0;
  std::uint32_t barriers = 0;
};

// Who last wrote / read an LDS byte, and when (see lds.cpp).
struct LdsAccess {
  const char* file = nullptr;
  std::int32_t line = 0;
  std::uint32_t epoch = 0;
  std::uint32_t barriers = 0;
  std::uint16_t tid = kNoThread;
};

struct LdsAllocation {
  const void* key;
  std::uint32_t offset;
  std::uint32_t bytes;
};

struct LdsBankRecorder;  // lds_banks.cpp: the running workgroup's LDS accesses, when profiled

struct Launch {
  LaunchConfig config;
  void (*body)(void*) = nullptr;
  void* body_arg = nullptr;

  std::vector<FiberStack> stacks;
  std::vector<Thread> threads;
  std::vector<Wave> waves;
  Fiber scheduler;

  // the running workgroup
  std::uint32_t workgroup[3] = {0, 0, 0};
  std::uint32_t barrier_waves = 0;  // waves waiting at the workgroup barrier
  std::uint32_t barrier_first_wave = 0;
  Site barrier_site{nullptr, 0};
  std::uint32_t finished_waves = 0;

  // LDS: one arena of lds_used bytes, allocations stacked in the order of their first call
  std::vector<unsigned char> lds;
  std::uint32_t lds_used = 0;
  std::vector<LdsAllocation> lds_allocations;
  std::vector<LdsAccess> lds_last_write, lds_last_read;

  // LaunchConfig::profile_lds_banks: every lane's LDS addresses per access site (lds_banks.cpp)
  std::shared_ptr<LdsBankRecorder> banks;

  // scratch of the MFMA rendezvous (mfma.cpp)
  std::vector<double> mfma_a, mfma_b;

  // how the launch stopped early
  bool faulted = false;
  std::string fault_message;
  std::exception_ptr exception;
};

// The launch and lane running on this OS thread (set by run() and the scheduler).
Launch& launch_state();
Thread& current_thread(Site at, const char* op);

// Stops the launch: records the message and leaves the running lane for good. Build the
// message in a function returning std::string so that no temporary is left on the abandoned
// fiber stack.
[[noreturn]] void fault(std::string message);

// "file:line" of a call site.
std::string where(Site at);
// "workgroup (x,y,z) wave w lane l" of a lane.
std::string who(const Thread& thread);

// LDS bank profile (lds_banks.cpp): one lane's access, a whole wave's (a rendezvous), and the
// end of a workgroup (its instances are costed and added to the process-wide profile).
void lds_bank_record_lane(Launch& L, const Thread& me, Site at, const char* op, std::uint32_t addr,
                          std::uint32_t bytes);
void lds_bank_record_wave(Launch& L, Site at, const char* op, const std::uint32_t (&addr)[kLanes],
                          std::uint32_t bytes);
void lds_bank_flush(Launch& L);

// Gathers this lane's operands into the wave's rendezvous `op` at `at`; returns when the
// rendezvous is complete (its result written through `result`).
void rendezvous(const char* op, Site at, Compute compute, const void* operand, void* result);

}  // namespace uq::emu::detail
