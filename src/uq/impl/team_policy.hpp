#pragma once
// The launch policy of every generic team kernel, and the size rule that keeps it valid.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <type_traits>

namespace uq::impl {

// Light weight: the functor travels as a kernel argument. Kokkos' CUDA default for a functor
// over 512 bytes is a launch through constant memory, which first waits on the host for the
// previous such launch's event: inside a CUDA graph capture that wait is an error
// (cudaErrorInvalidValue) and a captured uq call fails, and back to back it serialises calls on
// the host. Other backends ignore the hint.
template <class ExecSpace, class... Traits>
using TeamPolicyFor = Kokkos::TeamPolicy<ExecSpace, Traits..., Kokkos::Experimental::WorkItemProperty::HintLightWeight_t>;

// A kernel argument holds 4 KiB (CUDA's limit, which Kokkos checks before honouring the hint);
// the launch wraps the functor with its policy, so the functor keeps a margin for it. A functor
// past this bound would silently go back to the constant-memory launch.
inline constexpr std::size_t kMaxFunctorBytes = 4096 - 512;

template <class Functor>
inline constexpr bool fits_kernel_argument = sizeof(Functor) <= kMaxFunctorBytes;

}  // namespace uq::impl
