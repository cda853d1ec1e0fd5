// Launcher of the sm90 decode partition kernel (launch_decode.hpp): checks, picks the kernel
// instance for QG, launches on the caller's stream. Compiled by nvcc for sm_90a into uq_sm90.
#include "sm90/decode_grid.hpp"
#include "sm90/decode_kernel.cuh"
#include "sm90/launch_checks.hpp"
#include "sm90/launch_decode.hpp"

#include <cuda_runtime.h>

namespace uq::sm90 {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw uq::Error("uq::sm90::launch_decode_partitions", what, "cudaSuccess (an sm_90 device)",
                    std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
}

template <int QG, bool kBulk, int kCtas>
void launch_instance(const DecodeKernelArgs& a, std::int64_t blocks, cudaStream_t stream) {
  constexpr int smem = decode_smem_bytes(QG, kCtas);
  // The ring needs more than the default 48 KB: opt in once per instance (thread-safe static).
  static const cudaError_t opted =
      cudaFuncSetAttribute(decode_partitions_kernel<QG, kBulk, kCtas>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  check(opted, "cudaFuncSetAttribute(max dynamic shared memory)");
  decode_partitions_kernel<QG, kBulk, kCtas><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(a);
}

// The instance for the copy kind (decode_ctas_per_sm, decode_kernel.cuh).
template <int QG>
void launch(const DecodeKernelArgs& a, std::int64_t blocks, cudaStream_t stream) {
  if (!(a.flags & kBulkLoads)) launch_instance<QG, false, decode_ctas_per_sm(QG, false, false)>(a, blocks, stream);
  else if (a.flags & kDenseRows) launch_instance<QG, true, decode_ctas_per_sm(QG, true, true)>(a, blocks, stream);
  else launch_instance<QG, true, decode_ctas_per_sm(QG, true, false)>(a, blocks, stream);
}

// decode_ctas_per_bh for this launch on the current device. The search is O(partitions) and
// the SM-count query a driver call, and an engine repeats the same shape call after call (a
// single call is timed on the host's critical path): the last answer of this thread is reused.
int ctas_per_bh(const DecodePartitionsLaunch& l, int ctas_per_sm) {
  struct Key {
    int device, qg, partitions, tgpp, ctas_per_sm;
    std::int64_t nbh, tokens;
    bool operator==(const Key& o) const {
      return device == o.device && qg == o.qg && partitions == o.partitions && tgpp == o.tgpp &&
             ctas_per_sm == o.ctas_per_sm && nbh == o.nbh &&
             tokens == o.tokens;
    }
  };
  thread_local Key last{-1, 0, 0, 0, 0, 0, 0};
  thread_local int last_r = 1;
  Key k{0, l.qg, l.partitions, l.tgpp, ctas_per_sm, static_cast<std::int64_t>(l.num_seqs) * l.num_kv_heads,
        static_cast<std::int64_t>(l.max_blocks_per_seq) * l.block_size};
  check(cudaGetDevice(&k.device), "cudaGetDevice");
  if (k == last) return last_r;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, k.device), "cudaDeviceGetAttribute(SM count)");
  last_r = decode_ctas_per_bh(k.nbh, k.partitions, k.tgpp, k.tokens, sms, k.ctas_per_sm);
  last = k;
  return last_r;
}

}  // namespace

void launch_decode_partitions(const DecodePartitionsLaunch& l) {
  DecodeKernelArgs a = make_decode_kernel_args(l);
  if (decode_partitions_blocks(l) == 0) return;
  a.ctas_per_bh = ctas_per_bh(
      l, decode_ctas_per_sm(l.qg, (a.flags & kBulkLoads) != 0, (a.flags & kDenseRows) != 0));
  const std::int64_t blocks = static_cast<std::int64_t>(l.num_seqs) * l.num_kv_heads * a.ctas_per_bh;
  auto stream = static_cast<cudaStream_t>(l.stream);
  switch (l.qg) {
    case 6: launch<6>(a, blocks, stream); break;
    case 8: launch<8>(a, blocks, stream); break;
    default: launch<16>(a, blocks, stream); break;  // qg checked: 16
  }
  check(cudaGetLastError(), "kernel launch");
}

}  // namespace uq::sm90
