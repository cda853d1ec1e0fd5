// The reusable objects: uq.DecodePlan, uq.KvWriter, uq.IndexKeyWriter, uq.ScorePlan,
// uq.BlockSelector, and uq.Status. Each lives on one execution space (its device) and issues
// each run on that run's stream; run() takes every array as given (no allocation, no copy), so
// with check=False a run is graph-capturable on a stream the object has already run on.
#include "argument_sets.hpp"
#include "bindings.hpp"
#include "shapes.hpp"

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>

namespace uqpy {
namespace {

// The space an object is built on: the workspace's device if one is given, else `device`
// ("cpu", "cuda", "cuda:N", or an object whose str() is that, like torch.device), else the
// build's default (the device space of a CUDA build, the host space otherwise).
Space& object_space(const char* fn, py::handle device, const Tensor* workspace) {
  const Arg ad{fn, "device"};
  Space* named = nullptr;
  if (!device.is_none()) named = &space_named(std::string(py::str(device)), ad);
  if (workspace != nullptr) {
    Space& ws = space_for(workspace->device, Arg{fn, "workspace"});
    if (named != nullptr && named != &ws)
      fail(ad, "the workspace's device (" + device_name(ws.device()) + ") or None",
           "\"" + std::string(py::str(device)) + "\"");
    return ws;
  }
  if (named != nullptr) return *named;
  return device_space() != nullptr ? *device_space() : host_space();
}

// What every object binding holds: its implementation on one space, released at finalize().
template <class Impl>
class Holder : public Releasable {
 public:
  Holder(Space& space, std::unique_ptr<Impl> impl) : space_(&space), impl_(std::move(impl)) {}
  void release() override { impl_.reset(); }
  Impl& impl(const char* fn) {
    require_alive(fn);
    return *impl_;
  }
  Space* space() const { return space_; }
  std::string device() const { return device_name(space_->device()); }

 private:
  Space* space_;
  std::unique_ptr<Impl> impl_;
};

using DecodePlan = Holder<DecodePlanImpl>;
using KvWriter = Holder<KvWriterImpl>;
using IndexKeyWriter = Holder<IndexKeyWriterImpl>;
using ScorePlan = Holder<ScorePlanImpl>;
using BlockSelector = Holder<BlockSelectorImpl>;

DecodeDims decode_dims(int max_seqs, int num_kv_heads, int qg, int block_size, int max_blocks_per_seq,
                       int max_query_len, int max_query_tokens) {
  return DecodeDims{max_seqs, num_kv_heads, qg, block_size, max_blocks_per_seq, max_query_len, max_query_tokens};
}

int optional_int(py::handle v, int none_value) { return v.is_none() ? none_value : v.cast<int>(); }

template <class Obj>
void bind_common(py::class_<Obj>& c, const char* status_fn) {
  c.def(
       "status", [status_fn](Obj& o) { return o.impl(status_fn).status(); },
       "The device status counters (bad data masked on the device) since the last reset; reading them waits "
       "for the object's work.")
      .def(
          "reset_status", [status_fn](Obj& o) { o.impl(status_fn).reset_status(); }, "Clears the status counters.")
      .def_property_readonly("device", &Obj::device, "The device the object runs on (\"cpu\", \"cuda:0\").")
      .def_property_readonly(
          "execution_space", [](const Obj& o) { return std::string(o.space()->name()); },
          "The Kokkos execution space it runs on.");
}

void bind_status(py::module_& m) {
  py::class_<uq::Status> s(m, "Status",
                           "uq's device status counters: data found bad on the device, masked and counted.");
  for (int i = 0; i < uq::kNumCounters; ++i) {
    const char* name = uq::counter_name(static_cast<uq::Counter>(i));
    s.def_property_readonly(name, [i](const uq::Status& st) { return st.counts[i]; });
  }
  s.def_property_readonly("ok", &uq::Status::ok, "True when every counter is 0.")
      .def("as_dict",
           [](const uq::Status& st) {
             py::dict d;
             for (int i = 0; i < uq::kNumCounters; ++i) d[uq::counter_name(static_cast<uq::Counter>(i))] = st.counts[i];
             return d;
           })
      .def("__repr__", [](const uq::Status& st) { return "uq.Status(" + st.describe() + ")"; });
}

void bind_decode_plan(py::module_& m) {
  using py::arg;
  py::class_<DecodePlan> c(m, "DecodePlan", R"doc(
A reusable decode (uq::DecodePlan): its workspace (partial results and status counters) is
allocated once, or is the caller's `workspace` (a contiguous uint8 array of
DecodePlan.workspace_bytes(...) bytes, 16-byte aligned, on the plan's device); run() allocates
nothing and launches a fixed grid, so with check=False it can be captured in a CUDA graph (on a
stream the plan has run on before the capture) and replayed with new lengths and tables. The
grid is sized for max_seqs sequences of max_blocks_per_seq blocks; a run may have fewer of either.
Runs of one plan share its workspace: order them (one stream, or synchronised).
Several query tokens per sequence (speculative-decoding verification, MTP; spec ultraquant.md
section 5.9): a plan made with max_query_len > 1 (at most 16) takes runs with query_start_loc
(n_b <= max_query_len, at most max_query_tokens query tokens in all; default max_seqs *
max_query_len), or, with query_len > 1, q of num_seqs * query_len rows each run. Those runs take
the gfx950 multi-token kernel on a gfx950 device when max_query_len * qg <= 32, the sm90 one on
a Hopper GPU when max_query_len * qg <= 32, else the generic kernels (path_reason says why).
)doc");
  c.def(py::init([](int max_seqs, int num_kv_heads, int qg, int block_size, int max_blocks_per_seq, float scale,
                    bool q_rotated, py::handle partitions, const std::string& backend, bool check,
                    py::handle workspace, py::handle device, py::handle stream, int max_query_len,
                    int max_query_tokens, int query_len) {
          constexpr const char* fn = "uq.DecodePlan";
          require_alive(fn);
          Tensor ws;
          if (!workspace.is_none())
            ws = typed_output(workspace, Arg{fn, "workspace"}, 1, shape::kWorkspace, {DType::u8}, kUint8);
          Space& space = object_space(fn, device, workspace.is_none() ? nullptr : &ws);
          const DecodeSettings d{scale,        qg,    q_rotated, optional_int(partitions, 0), parse_backend(backend, fn),
                                 check,        query_len};
          auto impl = space.decode_plan(
              decode_dims(max_seqs, num_kv_heads, qg, block_size, max_blocks_per_seq, max_query_len, max_query_tokens),
              d, ws, stream_for(space, stream, fn));
          return std::make_unique<DecodePlan>(space, std::move(impl));
        }),
        arg("max_seqs"), arg("num_kv_heads"), arg("qg"), arg("block_size"), arg("max_blocks_per_seq"), py::kw_only(),
        arg("scale") = 1.0f / 16.0f, arg("q_rotated") = false, arg("partitions") = py::none(),
        arg("backend") = "auto", arg("check") = true, arg("workspace") = py::none(), arg("device") = py::none(),
        arg("stream") = py::none(), arg("max_query_len") = 1, arg("max_query_tokens") = 0, arg("query_len") = 1);
  c.def(
      "run",
      [](DecodePlan& p, py::handle q, py::handle kv_cache, py::handle block_tables, py::handle seq_lens, py::handle out,
         py::handle lse, py::handle stream, py::handle query_start_loc) {
        constexpr const char* fn = "uq.DecodePlan.run";
        DecodePlanImpl& impl = p.impl(fn);
        Call call;
        const DecodeArgs a =
            decode_args(fn, q, kv_cache, block_tables, seq_lens, out, lse, p.space(), stream, call, query_start_loc);
        impl.run(a, call.stream);
      },
      arg("q"), arg("kv_cache"), arg("block_tables"), arg("seq_lens"), arg("out"), arg("lse") = py::none(),
      py::kw_only(), arg("stream") = py::none(), arg("query_start_loc") = py::none(), R"doc(
Decodes q [num_seqs <= max_seqs, num_kv_heads*qg, 256] (bf16, any strides) over kv_cache into out
(bf16, any strides) and, if given, lse (float32 [num_seqs, num_q_heads], any strides).
block_tables: int32 [num_seqs, W <= max_blocks_per_seq]; seq_lens: int32 [num_seqs].
Several query tokens per sequence: with query_start_loc (int32 [num_seqs + 1]: 0, non-decreasing,
T), q, out and lse have T rows, sequence b's being query_start_loc[b] .. query_start_loc[b+1] - 1;
with the plan's query_len > 1, T = num_seqs * query_len. seq_lens count the new tokens; query token
j of n sees positions 0 .. seq_len - n + j (a row that sees none gives 0 and lse -inf).
)doc");
  c.def(
      "_run_repeated",
      [](DecodePlan& p, py::handle q, py::handle kv_cache, py::handle block_tables, py::handle seq_lens, py::handle out,
         py::handle lse, int iterations, py::handle stream) {
        constexpr const char* fn = "uq.DecodePlan._run_repeated";
        DecodePlanImpl& impl = p.impl(fn);
        Call call;
        const DecodeArgs a = decode_args(fn, q, kv_cache, block_tables, seq_lens, out, lse, p.space(), stream, call);
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iterations; ++i) impl.run(a, call.stream);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      arg("q"), arg("kv_cache"), arg("block_tables"), arg("seq_lens"), arg("out"), arg("lse"), arg("iterations"),
      arg("stream") = py::none(),
      "Measurement hook (python/tests/device_check.py): `iterations` runs of the C++ plan over arguments "
      "imported once, as a C++ caller makes them; returns the host seconds they took (no wait for the device).");
  c.def_static(
      "workspace_bytes",
      [](int max_seqs, int num_kv_heads, int qg, int block_size, int max_blocks_per_seq, py::handle partitions,
         int max_query_len, int max_query_tokens, int query_len) {
        require_alive("uq.DecodePlan.workspace_bytes");
        DecodeSettings d;
        d.partitions = optional_int(partitions, 0);
        d.query_len = query_len;
        return decode_workspace_bytes(
            decode_dims(max_seqs, num_kv_heads, qg, block_size, max_blocks_per_seq, max_query_len, max_query_tokens),
            d);
      },
      arg("max_seqs"), arg("num_kv_heads"), arg("qg"), arg("block_size"), arg("max_blocks_per_seq"), py::kw_only(),
      arg("partitions") = py::none(), arg("max_query_len") = 1, arg("max_query_tokens") = 0, arg("query_len") = 1,
      "Bytes of a caller-provided workspace for a plan of this shape.");
  c.attr("workspace_alignment") = decode_workspace_alignment();
  c.def_property_readonly(
       "path", [](DecodePlan& p) { return std::string(uq::path_name(p.impl("uq.DecodePlan.path").path())); },
       "The path of the last run (before any: the device's candidate): \"generic\", \"sm90\", \"gfx950\".")
      .def_property_readonly(
          "path_reason", [](DecodePlan& p) { return p.impl("uq.DecodePlan.path_reason").path_reason(); },
          "Why the last run did not take the tuned path (\"\" when it did).")
      .def_property_readonly(
          "launches_per_run", [](DecodePlan& p) { return p.impl("uq.DecodePlan").launches_per_run(); },
          "Kernels one run launches: 1 with one partition (no reducer), else 2.")
      .def_property_readonly(
          "partitions", [](DecodePlan& p) { return p.impl("uq.DecodePlan").partitions(); },
          "The partition count P the plan runs with.");
  bind_common(c, "uq.DecodePlan.status");
}

template <class Writer>
std::unique_ptr<Writer> make_writer(const char* fn, const std::string& backend, bool check, py::handle device,
                                    py::handle stream) {
  require_alive(fn);
  Space& space = object_space(fn, device, nullptr);
  const WriterSettings w{parse_backend(backend, fn), check};
  const Stream s = stream_for(space, stream, fn);
  if constexpr (std::is_same<Writer, KvWriter>::value)
    return std::make_unique<KvWriter>(space, space.kv_writer(w, s));
  else
    return std::make_unique<IndexKeyWriter>(space, space.index_key_writer(w, s));
}

void bind_writers(py::module_& m) {
  using py::arg;
  py::class_<KvWriter> kv(m, "KvWriter", R"doc(
A reusable cache writer (uq::KvWriter): its status counters are allocated once; with check=False
a run is one kernel launch and never waits for the device (graph-capturable).
)doc");
  kv.def(py::init([](bool check, const std::string& backend, py::handle device, py::handle stream) {
           return make_writer<KvWriter>("uq.KvWriter", backend, check, device, stream);
         }),
         py::kw_only(), arg("check") = true, arg("backend") = "auto", arg("device") = py::none(),
         arg("stream") = py::none())
      .def(
          "run",
          [](KvWriter& w, py::handle k, py::handle v, py::handle slot_mapping, py::handle kv_cache, py::handle stream) {
            constexpr const char* fn = "uq.KvWriter.run";
            KvWriterImpl& impl = w.impl(fn);
            Call call;
            const KvArgs a = kv_args(fn, k, v, slot_mapping, kv_cache, w.space(), stream, call);
            impl.run(a.k, a.v, a.slots, a.kv_cache, call.stream);
          },
          arg("k"), arg("v"), arg("slot_mapping"), arg("kv_cache"), py::kw_only(), arg("stream") = py::none(),
          "Quantises k, v [num_tokens, num_kv_heads, 256] (bf16) into kv_cache (uint8, in place) at slot_mapping "
          "(int64 or int32 [num_tokens], block * block_size + pos; negative: skipped).");
  bind_common(kv, "uq.KvWriter.status");

  py::class_<IndexKeyWriter> ix(m, "IndexKeyWriter", R"doc(
A reusable NVFP4 index key writer (uq::IndexKeyWriter), as KvWriter.
)doc");
  ix.def(py::init([](bool check, const std::string& backend, py::handle device, py::handle stream) {
           return make_writer<IndexKeyWriter>("uq.IndexKeyWriter", backend, check, device, stream);
         }),
         py::kw_only(), arg("check") = true, arg("backend") = "auto", arg("device") = py::none(),
         arg("stream") = py::none())
      .def(
          "run",
          [](IndexKeyWriter& w, py::handle keys, py::handle slot_mapping, py::handle index_cache, py::handle stream) {
            constexpr const char* fn = "uq.IndexKeyWriter.run";
            IndexKeyWriterImpl& impl = w.impl(fn);
            Call call;
            const IndexKeyArgs a = index_key_args(fn, keys, slot_mapping, index_cache, w.space(), stream, call);
            impl.run(a.keys, a.slots, a.index_cache, call.stream);
          },
          arg("keys"), arg("slot_mapping"), arg("index_cache"), py::kw_only(), arg("stream") = py::none(),
          "Quantises keys [num_tokens, 128] (bf16 or float32) into index_cache (uint8 [num_blocks, 9216], in "
          "place) at slot_mapping (int64 or int32, block * 128 + pos; negative: skipped).");
  bind_common(ix, "uq.IndexKeyWriter.status");
}

void bind_score_objects(py::module_& m) {
  using py::arg;
  py::class_<ScorePlan> sp(m, "ScorePlan", R"doc(
A reusable index scorer (uq::ScorePlan) for up to max_reqs requests of query_len rows, `heads`
index heads (1, 2 or 4; heads * query_len <= 32) and block tables max_blocks wide; with
check=False a run allocates nothing and does not wait (graph-capturable).
)doc");
  sp.def(py::init([](int max_reqs, int heads, int max_blocks, int query_len, int init_blocks, int local_blocks,
                     const std::string& backend, bool check, py::handle device, py::handle stream) {
           constexpr const char* fn = "uq.ScorePlan";
           require_alive(fn);
           Space& space = object_space(fn, device, nullptr);
           const ScoreSettings c{query_len, init_blocks, local_blocks, parse_backend(backend, fn), check};
           auto impl = space.score_plan(ScoreDims{max_reqs, query_len, heads, max_blocks}, c, stream_for(space, stream, fn));
           return std::make_unique<ScorePlan>(space, std::move(impl));
         }),
         arg("max_reqs"), arg("heads"), arg("max_blocks"), py::kw_only(), arg("query_len") = 1,
         arg("init_blocks") = 0, arg("local_blocks") = 0, arg("backend") = "auto", arg("check") = true,
         arg("device") = py::none(), arg("stream") = py::none())
      .def(
          "run",
          [](ScorePlan& p, py::handle q, py::handle index_cache, py::handle block_tables, py::handle seq_lens,
             py::handle scores, py::handle stream) {
            constexpr const char* fn = "uq.ScorePlan.run";
            ScorePlanImpl& impl = p.impl(fn);
            Call call;
            const ScoreArgs a = score_args(fn, q, index_cache, block_tables, seq_lens, scores, p.space(), stream, call);
            impl.run(a, call.stream);
          },
          arg("q"), arg("index_cache"), arg("block_tables"), arg("seq_lens"), arg("scores"), py::kw_only(),
          arg("stream") = py::none(),
          "Scores q [num_reqs * query_len, heads, 128] (uint8 E4M3 bits) into scores (float32 [heads, "
          "num_reqs * query_len, S >= max_blocks], any strides; entries past a request's blocks are not written).")
      .def_property_readonly(
          "path", [](ScorePlan& p) { return std::string(uq::path_name(p.impl("uq.ScorePlan.path").path())); })
      .def_property_readonly("path_reason",
                             [](ScorePlan& p) { return p.impl("uq.ScorePlan.path_reason").path_reason(); });
  bind_common(sp, "uq.ScorePlan.status");

  py::class_<BlockSelector> bs(m, "BlockSelector", R"doc(
A reusable top-k block selection (uq::BlockSelector) over scores as ScorePlan writes them.
)doc");
  bs.def(py::init([](int query_len, int max_blocks, bool check, py::handle device, py::handle stream) {
           constexpr const char* fn = "uq.BlockSelector";
           require_alive(fn);
           Space& space = object_space(fn, device, nullptr);
           auto impl = space.block_selector(SelectSettings{query_len, max_blocks, check}, stream_for(space, stream, fn));
           return std::make_unique<BlockSelector>(space, std::move(impl));
         }),
         py::kw_only(), arg("query_len") = 1, arg("max_blocks") = 0, arg("check") = true, arg("device") = py::none(),
         arg("stream") = py::none())
      .def(
          "run",
          [](BlockSelector& b, py::handle scores, py::handle seq_lens, py::handle out, py::handle stream) {
            constexpr const char* fn = "uq.BlockSelector.run";
            BlockSelectorImpl& impl = b.impl(fn);
            Call call;
            const SelectArgs a = select_args(fn, scores, seq_lens, out, b.space(), stream, call);
            impl.run(a.scores, a.seq_lens, a.out, call.stream);
          },
          arg("scores"), arg("seq_lens"), arg("out"), py::kw_only(), arg("stream") = py::none(),
          "Writes the k = out.shape[2] best visible blocks of each score row into out (int32 [heads, rows, k], "
          "-1 padded).");
  bind_common(bs, "uq.BlockSelector.status");
}

}  // namespace

void bind_objects(py::module_& m) {
  bind_status(m);
  bind_decode_plan(m);
  bind_writers(m);
  bind_score_objects(m);
}

}  // namespace uqpy
