// uq on Kokkos::Cuda (CUDA builds), for arrays in CUDA memory (torch CUDA tensors, CuPy, JAX),
// with the work of each call issued on the caller's stream.
//
// A Kokkos::Cuda instance on a stream allocates scratch memory and clears it synchronously
// when it is made, which a stream being captured into a CUDA graph does not allow: instances
// are therefore made once per stream, on the stream's first use outside a capture, and kept
// until Kokkos is finalised. A first use during a capture is refused with a uq::Error that
// says how to avoid it (one eager call on that stream before capturing).
#include "space_impl.hpp"

#include <cuda_runtime.h>

#include <map>

namespace uqpy {
namespace {

class CudaInstances {
 public:
  using exec_type = Kokkos::Cuda;

  exec_type get(Stream s) {
    // The legacy default stream (0) is the one of Kokkos' default instance (Kokkos 3.4, which CI
    // and the H200 builds use; tests/test_cuda_graph_replay.cpp relies on the same fact).
    if (s.handle == 0) return exec_type();
    auto it = instances_.find(s.handle);
    if (it != instances_.end()) return it->second;
    cudaStream_t stream = reinterpret_cast<cudaStream_t>(s.handle);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of this query
      throw uq::Error("uq", "stream", "a valid CUDA stream handle of the current device",
                      std::to_string(s.handle));
    }
    if (capture != cudaStreamCaptureStatusNone)
      throw uq::Error("uq", "stream",
                      "a stream uq has already run on before it is captured (make one eager call, or build "
                      "the plan or writer, on this stream first: a Kokkos instance cannot be made during "
                      "a capture)",
                      "the first use of stream " + std::to_string(s.handle) + " inside a CUDA graph capture");
    return instances_.emplace(s.handle, exec_type(stream)).first->second;
  }

  void clear() { instances_.clear(); }

 private:
  std::map<std::uintptr_t, exec_type> instances_;
};

}  // namespace

std::unique_ptr<Space> make_device_space() {
  const int device = Kokkos::Cuda().cuda_device();
  return std::make_unique<SpaceOn<Kokkos::Cuda, CudaInstances>>(Kokkos::Cuda::name(), Device{DeviceKind::cuda, device},
                                                                true);
}

}  // namespace uqpy
