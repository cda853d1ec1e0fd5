// The imports of each operation's arguments, shared by its free function and its plan or writer:
// one place says what each argument is (rank, type, output or not) and that all of them are on
// the call's device. plan_space: the space of the plan or writer that runs them (null for a
// free function, which runs where its first array is). Every check comes before any work.
#pragma once

#include "bindings.hpp"

namespace uqpy {

// q (bf16 input), kv_cache, block_tables, seq_lens, out (bf16 output), lse (float32 output or None),
// query_start_loc (int32 input or None: several query tokens per sequence).
DecodeArgs decode_args(const char* fn, py::handle q, py::handle kv_cache, py::handle block_tables,
                       py::handle seq_lens, py::handle out, py::handle lse, Space* plan_space, py::handle stream,
                       Call& call, py::handle query_start_loc = py::none());

struct KvArgs {
  Tensor k, v, slots, kv_cache;
};
KvArgs kv_args(const char* fn, py::handle k, py::handle v, py::handle slots, py::handle kv_cache, Space* plan_space,
               py::handle stream, Call& call);

struct IndexKeyArgs {
  Tensor keys, slots, index_cache;
};
IndexKeyArgs index_key_args(const char* fn, py::handle keys, py::handle slots, py::handle index_cache,
                            Space* plan_space, py::handle stream, Call& call);

ScoreArgs score_args(const char* fn, py::handle q, py::handle index_cache, py::handle block_tables,
                     py::handle seq_lens, py::handle scores, Space* plan_space, py::handle stream, Call& call);

struct SelectArgs {
  Tensor scores, seq_lens, out;
};
SelectArgs select_args(const char* fn, py::handle scores, py::handle seq_lens, py::handle out, Space* plan_space,
                       py::handle stream, Call& call);

// rotate_query: q (bf16 input), q_rot (float32 output).
struct RotateArgs {
  Tensor q, q_rot;
};
RotateArgs rotate_args(const char* fn, py::handle q, py::handle q_rot, py::handle stream, Call& call);

}  // namespace uqpy
