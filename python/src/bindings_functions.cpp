// The free functions, one uq call each, with every output given (uq/__init__.py allocates the
// outputs a caller leaves out). Like the C++ functions they build a temporary plan or writer
// per call; loops and graph capture use the objects of bindings_objects.cpp.
#include "argument_sets.hpp"
#include "bindings.hpp"

namespace uqpy {
namespace {

void write_kv(py::handle k, py::handle v, py::handle slot_mapping, py::handle kv_cache, bool check,
              const std::string& backend, py::handle stream) {
  constexpr const char* fn = "uq.write_kv";
  require_alive(fn);
  Call c;
  const KvArgs a = kv_args(fn, k, v, slot_mapping, kv_cache, nullptr, stream, c);
  c.space->write_kv(a.k, a.v, a.slots, a.kv_cache, WriterSettings{parse_backend(backend, fn), check}, c.stream);
}

void decode(py::handle q, py::handle kv_cache, py::handle block_tables, py::handle seq_lens, py::handle out,
            py::handle lse, float scale, int qg, bool q_rotated, int partitions, const std::string& backend, bool check,
            py::handle stream, py::handle query_start_loc, int query_len) {
  constexpr const char* fn = "uq.decode";
  require_alive(fn);
  Call c;
  const DecodeArgs a = decode_args(fn, q, kv_cache, block_tables, seq_lens, out, lse, nullptr, stream, c, query_start_loc);
  c.space->decode(a, DecodeSettings{scale, qg, q_rotated, partitions, parse_backend(backend, fn), check, query_len},
                  c.stream);
}

void rotate_query(py::handle q, py::handle out, py::handle stream) {
  constexpr const char* fn = "uq.rotate_query";
  require_alive(fn);
  Call c;
  const RotateArgs a = rotate_args(fn, q, out, stream, c);
  c.space->rotate_query(a.q, a.q_rot, c.stream);
}

void write_index_keys(py::handle keys, py::handle slot_mapping, py::handle index_cache, bool check,
                      const std::string& backend, py::handle stream) {
  constexpr const char* fn = "uq.write_index_keys";
  require_alive(fn);
  Call c;
  const IndexKeyArgs a = index_key_args(fn, keys, slot_mapping, index_cache, nullptr, stream, c);
  c.space->write_index_keys(a.keys, a.slots, a.index_cache, WriterSettings{parse_backend(backend, fn), check},
                            c.stream);
}

void score(py::handle q, py::handle index_cache, py::handle block_tables, py::handle seq_lens, py::handle out,
           int query_len, int init_blocks, int local_blocks, const std::string& backend, bool check,
           py::handle stream) {
  constexpr const char* fn = "uq.score";
  require_alive(fn);
  Call c;
  const ScoreArgs a = score_args(fn, q, index_cache, block_tables, seq_lens, out, nullptr, stream, c);
  c.space->score(a, ScoreSettings{query_len, init_blocks, local_blocks, parse_backend(backend, fn), check}, c.stream);
}

void select_blocks(py::handle scores, py::handle seq_lens, py::handle out, int query_len, int max_blocks, bool check,
                   py::handle stream) {
  constexpr const char* fn = "uq.select_blocks";
  require_alive(fn);
  Call c;
  const SelectArgs a = select_args(fn, scores, seq_lens, out, nullptr, stream, c);
  c.space->select_blocks(a.scores, a.seq_lens, a.out, SelectSettings{query_len, max_blocks, check}, c.stream);
}

}  // namespace

void bind_functions(py::module_& m) {
  using py::arg;
  m.def("_write_kv", &write_kv, arg("k"), arg("v"), arg("slot_mapping"), arg("kv_cache"), arg("check"),
        arg("backend"), arg("stream"));
  m.def("_decode", &decode, arg("q"), arg("kv_cache"), arg("block_tables"), arg("seq_lens"), arg("out"), arg("lse"),
        arg("scale"), arg("qg"), arg("q_rotated"), arg("partitions"), arg("backend"), arg("check"), arg("stream"),
        arg("query_start_loc"), arg("query_len"));
  m.def("_rotate_query", &rotate_query, arg("q"), arg("out"), arg("stream"));
  m.def("_write_index_keys", &write_index_keys, arg("keys"), arg("slot_mapping"), arg("index_cache"), arg("check"),
        arg("backend"), arg("stream"));
  m.def("_score", &score, arg("q"), arg("index_cache"), arg("block_tables"), arg("seq_lens"), arg("out"),
        arg("query_len"), arg("init_blocks"), arg("local_blocks"), arg("backend"), arg("check"), arg("stream"));
  m.def("_select_blocks", &select_blocks, arg("scores"), arg("seq_lens"), arg("out"), arg("query_len"),
        arg("max_blocks"), arg("check"), arg("stream"));
}

}  // namespace uqpy
