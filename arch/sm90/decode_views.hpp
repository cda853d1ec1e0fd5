// Kokkos views -> the sm90 launch descriptions (launch_decode.hpp): what
// src/uq/impl/decode_spec.hpp hands to the CUDA launchers for Path::Sm90. Duck-typed on uq's
// internal structs (CacheAddressing, DecodePartials, DecodeParams of src/uq/impl) so that
// this header does not depend on their headers.
#pragma once

#include "sm90/launch_decode.hpp"

#include <cstdint>

namespace uq::sm90 {

// q: [num_seqs, num_q_heads, 256] bf16 (any layout); cache: uq::impl::CacheAddressing;
// tables: [num_seqs, max_blocks] int32; lens: [num_seqs] int32; partials:
// uq::impl::DecodePartials; counters: the status counter view; params: uq::impl::DecodeParams.
template <class Q, class Cache, class Tables, class Lens, class Partials, class Counters, class Params>
DecodePartitionsLaunch decode_partitions_launch(const Q& q, const Cache& cache, const Tables& tables,
                                                const Lens& lens, const Partials& partials,
                                                const Counters& counters, const Params& params, int num_seqs,
                                                void* stream) {
  static_assert(sizeof(*q.data()) == 2 && sizeof(*partials.out.data()) == 2, "bf16 views hold 16-bit values");
  DecodePartitionsLaunch l;
  l.stream = stream;
  l.partial_out = reinterpret_cast<std::uint16_t*>(partials.out.data());
  l.partial_l = partials.l.data();
  l.partial_m = partials.m.data();
  l.counters = counters.data();
  l.q = reinterpret_cast<const std::uint16_t*>(q.data());
  l.q_stride_seq = static_cast<std::int64_t>(q.stride(0));
  l.q_stride_head = static_cast<std::int64_t>(q.stride(1));
  l.q_stride_dim = static_cast<std::int64_t>(q.stride(2));
  l.q_rotated = params.q_rotated;
  l.cache = cache.base;
  l.num_blocks = cache.num_blocks;
  l.block_stride = cache.block_stride;
  l.block_size = cache.block_size;
  l.num_kv_heads = params.num_kv_heads;
  l.slot_bytes = cache.slot_bytes;
  l.block_tables = tables.data();
  l.table_stride_seq = static_cast<std::int64_t>(tables.stride(0));
  l.table_stride_block = static_cast<std::int64_t>(tables.stride(1));
  l.max_blocks_per_seq = params.max_blocks_per_seq;
  l.seq_lens = lens.data();
  l.seq_lens_stride = static_cast<std::int64_t>(lens.stride(0));
  l.num_seqs = num_seqs;
  l.qg = params.qg;
  l.partitions = params.partitions;
  l.tgpp = params.tgpp;
  l.scale = params.scale;
  return l;
}

// partials as above; out: [num_seqs, num_q_heads, 256] bf16 (any layout).
template <class Partials, class Out, class Params>
DecodeReduceLaunch decode_reduce_launch(const Partials& partials, const Out& out, const Params& params, int num_seqs,
                                        void* stream) {
  static_assert(sizeof(*out.data()) == 2, "bf16 views hold 16-bit values");
  DecodeReduceLaunch l;
  l.stream = stream;
  l.partial_out = reinterpret_cast<const std::uint16_t*>(partials.out.data());
  l.partial_l = partials.l.data();
  l.partial_m = partials.m.data();
  l.out = reinterpret_cast<std::uint16_t*>(out.data());
  l.out_stride_seq = static_cast<std::int64_t>(out.stride(0));
  l.out_stride_head = static_cast<std::int64_t>(out.stride(1));
  l.out_stride_dim = static_cast<std::int64_t>(out.stride(2));
  l.num_seqs = num_seqs;
  l.num_kv_heads = params.num_kv_heads;
  l.qg = params.qg;
  l.partitions = params.partitions;
  return l;
}

}  // namespace uq::sm90
