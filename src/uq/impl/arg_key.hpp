// What a writer's host checks depend on: each view's data pointer, element size, span,
// extents and strides. A writer object remembers the key of its last call that passed
// the checks, and a call with the same key skips them: a decode loop that writes the
// same buffers every step then pays no string building (the checks compose their
// messages eagerly, ~0.1-0.5 us each, which is the order of a launch).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace uq {
namespace impl {

// Up to 4 views of rank <= 4 (what the writers take): a fixed array, no allocation.
class ArgKey {
 public:
  template <class View>
  ArgKey& add(const View& v) {
    static_assert(View::rank <= 4, "ArgKey holds views of rank <= 4");
    push(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(v.data())));
    push(static_cast<std::int64_t>(sizeof(typename View::value_type)));
    push(static_cast<std::int64_t>(v.span()));
    for (int r = 0; r < static_cast<int>(View::rank); ++r) {
      push(static_cast<std::int64_t>(v.extent(r)));
      push(static_cast<std::int64_t>(v.stride(r)));
    }
    return *this;
  }
  bool operator==(const ArgKey& o) const { return n_ == o.n_ && std::equal(values_, values_ + n_, o.values_); }

 private:
  static constexpr int kCapacity = 4 * (3 + 2 * 4);
  void push(std::int64_t x) {
    if (n_ < kCapacity) values_[n_++] = x;
  }
  std::int64_t values_[kCapacity] = {};
  int n_ = 0;
};

}  // namespace impl
}  // namespace uq
