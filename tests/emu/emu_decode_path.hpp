// The emulated gfx950 decode path of the tests: the gfx950 UltraQuant decode kernels
// (arch/gfx950/decode_kernel.hpp, reduce_kernel.hpp) run in the wavefront emulator from the same
// source that decode.hip / reduce.hip compile for gfx950, through the emulator's launchers
// (decode_emulated.hpp) and the same views -> launch conversion as the HIP dispatch
// (uq/core/decode_launch.hpp). Each case is checked twice:
//
//  1. against the float64 reference with the tolerance of tests/support/decode_case.hpp,
//     derived there for any implementation of the spec's numerics;
//  2. against the generic Kokkos path run on the same inputs, element by element, with the
//     tighter tolerance derived at generic_tolerance() (emu_decode_path.cpp); plus the lse, the
//     partitions' m and l, and the status counters, which must be equal.
//
// Both paths run as DecodePlan::run does (revision 2 of spec ultraquant.md §5): with P = 1
// one partition kernel that writes out and lse itself, else the partition kernel (rows of
// empty partitions poisoned before and checked untouched after) and the reducer.
//
// Some cases change the inputs' layout before both paths run (a gathered q, padded cache
// blocks, a strided output) or overwrite cache bytes no token attends with 0xFF (NaN scales):
// the reference result does not depend on either (Variant).
//
// EmuDecodePath is this path for the shared decode cases (tests/decode_cases.hpp, stamped in
// test_emu_decode.cpp); check_both and its relatives serve the path's own tests
// (test_emu_decode_extras.cpp).
#pragma once

#include "support/decode_path.hpp"

#include <cstdint>
#include <vector>

namespace uqtest {

// How a case's inputs are presented to both paths.
struct Variant {
  bool poison_unattended = false;  // cache bytes no token attends -> 0xFF
  int q_dim_stride = 0;            // > 0: q gathered from a layout with this dim stride and odd strides
  bool odd_q_head_stride = false;  // dim stride 1 but 2-byte aligned rows (the kernel's 16-bit loads)
  std::int64_t block_padding = 0;  // extra bytes between cache blocks
  bool strided_out = false;        // the reducer writes a strided view
  bool zero_v_scales_of_seq0 = false;  // every V scale byte of sequence 0 -> 0 (codes kept)
  bool two_stages = false;         // P = 1 through partial rows and the reducer (not direct)
  int plan_extra_blocks = 0;       // the plan is sized for a table this much wider than the case's
};

// Everything one path produced for a case.
struct PathResults {
  std::vector<std::uint16_t> out;  // [B][Hq][256]
  std::vector<float> lse;          // [B][Hq]
  std::vector<float> l, m;         // partition rows [B][Hk][P][QG] (empty when P = 1 runs direct)
  uq::Status status;
};

// Both paths' results for a case.
struct BothPaths {
  PathResults emulated, generic;
  int partitions = 0, tgpp = 0;
  double seconds = 0.0;  // emulator time of the case
  double max_err_over_ref_tol = 0.0;
};

// Both paths on a case's device inputs as check_decode_lse passes them, with the variant's input
// changes: the emulated result lands in out and lse, both paths' results in `both`.
void run_both_paths(const DecodeCase& c, const Variant& v, BothPaths& both,
                    const Kokkos::View<const uq::bf16***, Kokkos::LayoutStride, Mem>& q,
                    const Kokkos::View<const std::uint8_t****, Kokkos::LayoutRight, Mem>& cache,
                    const Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Mem>& tables,
                    const Kokkos::View<const std::int32_t*, Kokkos::LayoutRight, Mem>& lens,
                    const Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem>& out, const LseView& lse);

// Both paths through check_decode_lse (the emulated result against the reference).
BothPaths run_both(const DecodeCase& c, const Variant& v);

// Both paths on a case's inputs without the reference check (for inputs changed in a way the
// reference does not know): the views as check_decode builds them.
BothPaths run_both_unchecked(const DecodeCase& c, const Variant& v);

// Host partition rows for an emulated run ([rows][256] partial bf16, l, m), poisoned: every l and
// m must be written (l is never negative), a partial row exactly where l > 0.
inline constexpr float kPoisonPartialL = -7.0f;
inline uq::impl::DecodePartials<Kokkos::HostSpace> poisoned_host_partials(std::int64_t rows) {
  uq::impl::DecodePartials<Kokkos::HostSpace> partials;
  partials.out = Kokkos::View<uq::bf16*, Kokkos::HostSpace>("emu partial out", rows * 256);
  partials.l = Kokkos::View<float*, Kokkos::HostSpace>("emu partial l", rows);
  partials.m = Kokkos::View<float*, Kokkos::HostSpace>("emu partial m", rows);
  Kokkos::deep_copy(partials.out, uq::bf16{kPoisonBf16});
  Kokkos::deep_copy(partials.l, kPoisonPartialL);
  Kokkos::deep_copy(partials.m, kPoisonPartialL);
  return partials;
}

inline double bf16_value(std::uint16_t bits) { return uq::codec::bf16_to_float(uq::bf16{bits}); }

// The tolerance of the emulated kernel against the generic path (derivation at its definition).
struct GenericTolerance {
  double smooth, flips;
};
GenericTolerance generic_tolerance(double generic, double vmax, double score_abs, std::int64_t attended);
// The tolerance of the emulated lse against the generic one (derivation at compare_lse,
// emu_decode_path.cpp): score_abs and attended tokens of the row.
double lse_generic_tolerance(double generic_lse, double score_abs, double attended);

// After a reference check of run_both_paths' emulated result: records it in `both`, compares
// the emulated path with the generic one (outputs, partitions, lse, counters) and prints the
// comparison.
void check_against_generic(const DecodeCase& c, BothPaths& both, const DecodeCheck& reference_check);

// run_both, then check_against_generic.
BothPaths check_both(const DecodeCase& c, const Variant& v = {});

// The emulated gfx950 path for the shared decode cases (support/decode_path.hpp): both paths
// run, the emulated one checked against the reference, then against the generic one.
struct EmuDecodePath {
  static constexpr const char* kName = "emulated gfx950";

  BothPaths both;

  template <class Q, class Cache, class Tables, class Lens, class Out, class Lse>
  uq::Status run(const DecodeCase& c, const Q& q, const Cache& cache, const Tables& tables, const Lens& lens,
                 const Out& out, const Lse& lse) {
    run_both_paths(c, Variant{}, both, q, cache, tables, lens, out, lse);
    return both.emulated.status;
  }
  DecodeTolerance tolerance(const DecodeCase&) const { return {}; }
  LseTolerance lse_tolerance(const DecodeCase&) const { return {}; }
  void cross_check(const DecodeCase& c, const DecodeCheck& check) { check_against_generic(c, both, check); }
};

}  // namespace uqtest
