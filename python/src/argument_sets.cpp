// What each operation's array arguments are (argument_sets.hpp).
#include "argument_sets.hpp"

#include "shapes.hpp"

namespace uqpy {

DecodeArgs decode_args(const char* fn, py::handle q, py::handle kv_cache, py::handle block_tables,
                       py::handle seq_lens, py::handle out, py::handle lse, Space* plan_space, py::handle stream,
                       Call& call, py::handle query_start_loc) {
  DecodeArgs a;
  const Arg aq{fn, "q"}, ac{fn, "kv_cache"}, at{fn, "block_tables"}, al{fn, "seq_lens"}, ao{fn, "out"}, ae{fn, "lse"};
  a.q = bf16_input(q, aq, 3, shape::kQ);
  call = call_on(a.q, aq, plan_space, stream);
  a.kv_cache = call.on(typed_input(kv_cache, ac, 4, shape::kKvCache, {DType::u8}, kUint8), ac);
  a.block_tables = call.on(typed_input(block_tables, at, 2, shape::kBlockTables, {DType::i32}, kInt32), at);
  a.seq_lens = call.on(typed_input(seq_lens, al, 1, shape::kSeqLens, {DType::i32}, kInt32), al);
  a.out = call.on(bf16_output(out, ao, 3, shape::kQ), ao);
  if (!lse.is_none()) a.lse = call.on(typed_output(lse, ae, 2, shape::kLse, {DType::f32}, kFloat32), ae);
  if (!query_start_loc.is_none()) {
    const Arg as{fn, "query_start_loc"};
    a.query_start_loc = call.on(typed_input(query_start_loc, as, 1, shape::kQueryStartLoc, {DType::i32}, kInt32), as);
  }
  return a;
}

KvArgs kv_args(const char* fn, py::handle k, py::handle v, py::handle slots, py::handle kv_cache, Space* plan_space,
               py::handle stream, Call& call) {
  KvArgs a;
  const Arg ak{fn, "k"}, av{fn, "v"}, as{fn, "slot_mapping"}, ac{fn, "kv_cache"};
  a.k = bf16_input(k, ak, 3, shape::kKv);
  call = call_on(a.k, ak, plan_space, stream);
  a.v = call.on(bf16_input(v, av, 3, shape::kKv), av);
  a.slots = call.on(typed_input(slots, as, 1, shape::kSlots, {DType::i64, DType::i32}, kSlotTypes), as);
  a.kv_cache = call.on(typed_output(kv_cache, ac, 4, shape::kKvCache, {DType::u8}, kUint8), ac);
  return a;
}

IndexKeyArgs index_key_args(const char* fn, py::handle keys, py::handle slots, py::handle index_cache,
                            Space* plan_space, py::handle stream, Call& call) {
  IndexKeyArgs a;
  const Arg ak{fn, "keys"}, as{fn, "slot_mapping"}, ac{fn, "index_cache"};
  // bf16 keys (bfloat16, or uint16 bits) or float32 keys, both as they are: the writer takes either.
  a.keys = typed_input(keys, ak, 2, shape::kIndexKeys, {DType::bf16, DType::u16, DType::f32},
                       "bfloat16, float32 or uint16 (bf16 bits)");
  call = call_on(a.keys, ak, plan_space, stream);
  a.slots = call.on(typed_input(slots, as, 1, shape::kSlots, {DType::i64, DType::i32}, kSlotTypes), as);
  a.index_cache = call.on(typed_output(index_cache, ac, 2, shape::kIndexCache, {DType::u8}, kUint8), ac);
  return a;
}

ScoreArgs score_args(const char* fn, py::handle q, py::handle index_cache, py::handle block_tables,
                     py::handle seq_lens, py::handle scores, Space* plan_space, py::handle stream, Call& call) {
  ScoreArgs a;
  const Arg aq{fn, "q"}, ac{fn, "index_cache"}, at{fn, "block_tables"}, al{fn, "seq_lens"}, as{fn, "scores"};
  a.q = e4m3_input(q, aq, 3, shape::kScoreQ);
  call = call_on(a.q, aq, plan_space, stream);
  a.index_cache = call.on(typed_input(index_cache, ac, 2, shape::kIndexCache, {DType::u8}, kUint8), ac);
  a.block_tables = call.on(typed_input(block_tables, at, 2, shape::kScoreTables, {DType::i32}, kInt32), at);
  a.seq_lens = call.on(typed_input(seq_lens, al, 1, shape::kReqLens, {DType::i32}, kInt32), al);
  a.scores = call.on(typed_output(scores, as, 3, shape::kScores, {DType::f32}, kFloat32), as);
  return a;
}

SelectArgs select_args(const char* fn, py::handle scores, py::handle seq_lens, py::handle out, Space* plan_space,
                       py::handle stream, Call& call) {
  SelectArgs a;
  const Arg as{fn, "scores"}, al{fn, "seq_lens"}, ao{fn, "out"};
  a.scores = typed_input(scores, as, 3, shape::kScores, {DType::f32}, kFloat32);
  call = call_on(a.scores, as, plan_space, stream);
  a.seq_lens = call.on(typed_input(seq_lens, al, 1, shape::kReqLens, {DType::i32}, kInt32), al);
  a.out = call.on(typed_output(out, ao, 3, shape::kSelected, {DType::i32}, kInt32), ao);
  return a;
}

RotateArgs rotate_args(const char* fn, py::handle q, py::handle q_rot, py::handle stream, Call& call) {
  RotateArgs a;
  const Arg aq{fn, "q"}, ao{fn, "out"};
  a.q = bf16_input(q, aq, 3, shape::kQ);
  call = call_on(a.q, aq, nullptr, stream);
  a.q_rot = call.on(typed_output(q_rot, ao, 3, shape::kQ, {DType::f32}, kFloat32), ao);
  return a;
}

}  // namespace uqpy
