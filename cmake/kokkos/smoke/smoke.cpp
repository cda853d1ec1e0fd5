// Smoke test of a Kokkos install made by build-kokkos.sh: the features uq's kernels rely on
// (RangePolicy parallel_for, TeamPolicy with per-team scratch and barriers, 64-bit atomics)
// compile, link and give the right answer in the default execution space. Exit status 0
// means the answer was checked and correct.
#include <Kokkos_Core.hpp>

#include <cstdio>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Team = Kokkos::TeamPolicy<Exec>;
using Scratch = Kokkos::View<int*, Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

constexpr int kCount = 1000;
constexpr int kChunk = 37;  // not a divisor of kCount: the last team has a partial chunk
constexpr unsigned long long kHigh = 1ull << 32;  // added per element so the high word carries

unsigned long long run() {
  Kokkos::View<int*> values("values", kCount);
  Kokkos::parallel_for(
      "smoke_fill", Kokkos::RangePolicy<Exec>(0, kCount),
      KOKKOS_LAMBDA(int i) { values(i) = 3 * i + 1; });

  // Each team stages its chunk in scratch, then every element of the chunk is added
  // atomically (with kHigh) to one 64-bit counter.
  Kokkos::View<unsigned long long, Exec::memory_space> total("total");
  const int teams = (kCount + kChunk - 1) / kChunk;
  Team policy(teams, Kokkos::AUTO);
  policy.set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(kChunk)));
  Kokkos::parallel_for(
      "smoke_team", policy, KOKKOS_LAMBDA(const Team::member_type& team) {
        Scratch staged(team.team_scratch(0), kChunk);
        const int base = team.league_rank() * kChunk;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk), [&](int j) {
          staged(j) = base + j < kCount ? values(base + j) : -1;
        });
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk), [&](int j) {
          if (staged(j) >= 0) {
            Kokkos::atomic_add(&total(), static_cast<unsigned long long>(staged(j)) + kHigh);
          }
        });
      });

  unsigned long long result = 0;
  Kokkos::deep_copy(result, total);
  return result;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    // sum over i < kCount of (3 i + 1) = 3 kCount (kCount - 1) / 2 + kCount
    const unsigned long long expected =
        3ull * kCount * (kCount - 1) / 2 + kCount + kHigh * kCount;
    const unsigned long long got = run();
    std::printf("kokkos_smoke: %s, Kokkos %d, total %llu, expected %llu: %s\n", Exec::name(),
                KOKKOS_VERSION, got, expected, got == expected ? "OK" : "WRONG");
    status = got == expected ? 0 : 1;
  }
  Kokkos::finalize();
  return status;
}
