// Launchers of the Hopper (sm_90) UltraQuant decode kernels, in plain C++ (no CUDA types):
// what src/uq/impl/decode_spec.hpp calls for Path::Sm90 on a Kokkos CUDA execution space.
// They are defined in decode.cu and reduce.cu (library uq_sm90) and launch on `stream`, the
// execution space's cudaStream_t passed as void*. Pointers are device pointers; strides are
// in elements. Each throws uq::Error for arguments the kernels cannot address (naming the
// argument) and when the CUDA launch itself fails. Nothing is allocated and nothing
// synchronises, so both launches can be captured in a CUDA graph.
#pragma once

#include <cstdint>

namespace uq::sm90 {

// The partition kernel: one 128-thread block per (sequence, KV head, partition).
struct DecodePartitionsLaunch {
  void* stream = nullptr;

  // Outputs: [num_seqs][num_kv_heads][partitions][qg] rows (dense), each with 256 bf16
  // (partial_out), its l and its m; and the uq::kNumCounters status counters.
  std::uint16_t* partial_out = nullptr;
  float* partial_l = nullptr;
  float* partial_m = nullptr;
  unsigned long long* counters = nullptr;

  // q: bf16 [num_seqs][num_kv_heads * qg][256], any non-negative strides.
  const std::uint16_t* q = nullptr;
  std::int64_t q_stride_seq = 0, q_stride_head = 0, q_stride_dim = 1;
  bool q_rotated = false;  // q holds WHT(q): only the E4M3 rounding is applied

  // kv_cache: uint8 [num_blocks][block_size][num_kv_heads][slot_bytes], dense in the last
  // three dimensions; block_stride in bytes.
  const std::uint8_t* cache = nullptr;
  std::int64_t num_blocks = 0;
  std::int64_t block_stride = 0;
  int block_size = 0;
  int num_kv_heads = 0;
  int slot_bytes = 0;

  // block_tables: int32 [num_seqs][max_blocks_per_seq]; seq_lens: int32 [num_seqs].
  const std::int32_t* block_tables = nullptr;
  std::int64_t table_stride_seq = 0, table_stride_block = 1;
  int max_blocks_per_seq = 0;
  const std::int32_t* seq_lens = nullptr;
  std::int64_t seq_lens_stride = 1;

  int num_seqs = 0;
  int qg = 0;          // 6, 8 or 16
  int partitions = 0;  // P >= 1
  int tgpp = 0;        // tile-groups per partition; P * TGPP * 256 >= max_blocks_per_seq * block_size
  float scale = 0.0f;  // softmax scale
};

// The reducer: one 256-thread block per (sequence, query head, 32-dim chunk); reads the
// partition kernel's outputs (same num_kv_heads, qg, partitions).
struct DecodeReduceLaunch {
  void* stream = nullptr;
  const std::uint16_t* partial_out = nullptr;
  const float* partial_l = nullptr;
  const float* partial_m = nullptr;
  // out: bf16 [num_seqs][num_kv_heads * qg][256], any non-negative strides.
  std::uint16_t* out = nullptr;
  std::int64_t out_stride_seq = 0, out_stride_head = 0, out_stride_dim = 1;
  int num_seqs = 0;
  int num_kv_heads = 0;
  int qg = 0;
  int partitions = 0;
};

void launch_decode_partitions(const DecodePartitionsLaunch& args);
void launch_decode_reduce(const DecodeReduceLaunch& args);

}  // namespace uq::sm90
