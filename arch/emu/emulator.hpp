// The gfx950 wavefront emulator: runs a kernel written against arch/gfx950/isa.hpp on the
// CPU, one workgroup of 64*W lanes at a time (see arch/gfx950/README.md).
//
//   uq::emu::LaunchConfig config;
//   config.grid = {num_seqs, num_heads, num_parts};
//   config.waves_per_workgroup = 1;
//   uq::emu::launch(config, [&] { my_kernel(args...); });   // the lambda is each lane's body
//
// Each lane is a cooperative fiber; lanes run one at a time, in a fixed order, until they
// reach a cross-lane operation or a barrier, which is a rendezvous: the last lane to arrive
// computes the result for all. A kernel that breaks the rules (divergent cross-lane calls,
// a lane leaving early, LDS out of bounds or racing, misaligned accesses) stops the launch
// with a uq::emu::Fault that names the source locations involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace uq::emu {

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  Dim3 grid;                               // workgroups, run x fastest, then y, then z
  std::uint32_t waves_per_workgroup = 1;   // W: 64*W lanes per workgroup (1..16)
  std::size_t stack_bytes = 256 * 1024;    // per lane: kernels keep a few KB of arrays
  std::uint8_t lds_poison = 0xFF;          // LDS content at workgroup start (0xFF: NaN in
                                           // f32, bf16 and e4m3, so stale reads show)
  bool detect_lds_races = true;            // see README: lanes run one after another
  bool profile_lds_banks = false;          // record every LDS access's bank-conflict degree
                                           // (lds_bank_profile below; costs time, off by default)
};

// A kernel broke an emulator rule, or its body threw: the launch stopped.
class Fault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How the emulated v_exp_f32 (isa.hpp fast_exp2) rounds. The hardware's error is about
// 1 ulp and not published exactly; the emulator rounds correctly unless told otherwise:
//   CorrectlyRounded  the float nearest 2^x (the default);
//   PerturbedUlp      that value moved by one ulp up or down, the direction a fixed hash of
//                     x's bits (deterministic: the same x always moves the same way), to show
//                     that a kernel's results stay within tolerances derived for a ~1 ulp
//                     exp2.
// The initial mode is PerturbedUlp when the environment variable UQ_EMU_EXP2 is "perturbed"
// at the first use, else CorrectlyRounded; set_exp2_mode changes it for the process.
enum class Exp2Mode { CorrectlyRounded, PerturbedUlp };
Exp2Mode exp2_mode();
void set_exp2_mode(Exp2Mode mode);

// LDS bank-conflict profile (lds_banks.cpp): for every LDS access site of the kernels run
// with LaunchConfig::profile_lds_banks, the cycles its instances take under a bank model, from
// every lane's address. The n-th execution of a site by each lane of a wave is one instruction
// instance (kernels keep LDS accesses in wave-uniform control flow, or predicate lanes off, so
// the lanes of an instance are those that executed it). Bank model (arch/gfx950/README.md,
// "LDS bank conflicts"): `banks` banks of 4 bytes; a wave's access is served in phases of
// banks * 4 / max(4, bytes per lane) consecutive lanes; a phase takes as many cycles as the
// largest number of distinct dwords any one bank holds among its lanes' accesses (lanes reading
// the same dword share it). gfx950 has 64 banks; 32 (CDNA3) is reported for comparison.
struct LdsBankSite {
  const char* file = nullptr;
  int line = 0;
  const char* op = nullptr;          // "ds_read", "ds_write" or "ds_read_tr" (ds_read_b64_tr_b16)
  std::uint32_t bytes = 0;           // per lane
  std::uint64_t instances = 0;
  std::uint64_t phases64 = 0, cycles64 = 0;  // 64 banks: phases with an active lane, cycles
  std::uint64_t phases32 = 0, cycles32 = 0;  // the same with 32 banks
  std::uint32_t max_degree64 = 0;    // the worst phase's cycles (64 banks)
};
// The sites seen since the last reset, in order of first use.
std::vector<LdsBankSite> lds_bank_profile();
void reset_lds_bank_profile();
// Cycles of one access under the model: lanes with bit l of `active` set access
// addr[l] .. addr[l] + bytes - 1. Returns the phases with an active lane, the cycles they take
// and the worst phase's cycles (the conflict degree).
struct LdsBankCost {
  std::uint32_t phases = 0, cycles = 0, worst = 0;
};
LdsBankCost lds_bank_cost(const std::uint32_t (&addr)[64], std::uint64_t active, std::uint32_t bytes,
                          std::uint32_t banks);

namespace detail {
void run(const LaunchConfig& config, void (*body)(void*), void* arg);
}  // namespace detail

// Runs body() as the kernel of every lane of every workgroup of config.grid. Returns when
// all workgroups have finished; throws uq::Error for a bad config and uq::emu::Fault when the
// kernel faults (an exception thrown by body is rethrown as is).
template <class Body>
void launch(const LaunchConfig& config, Body&& body) {
  using B = std::remove_reference_t<Body>;
  detail::run(
      config, [](void* b) { (*static_cast<B*>(b))(); },
      const_cast<void*>(static_cast<const void*>(std::addressof(body))));
}

}  // namespace uq::emu
