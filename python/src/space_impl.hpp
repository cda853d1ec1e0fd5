// uq on one Kokkos execution space (space.hpp's Space), as a template over the execution space
// and its per-stream instances: included by exactly one translation unit per space
// (space_host.cpp, space_cuda.cpp), so the library's kernels are instantiated once per space.
//
// Every array becomes an unmanaged Kokkos view over the caller's memory with the caller's
// strides (LayoutStride): nothing is copied. Element types are fixed per argument (bf16 bits for
// bf16 and uint16, int32 or int64 slots, bf16 or float index keys), which bounds the number of
// instantiations to the C++ API's own variants.
#pragma once

#include "space.hpp"
#include "uq/uq.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace uqpy {

template <class T, int Rank>
struct PointerOf {
  using type = typename PointerOf<T, Rank - 1>::type*;
};
template <class T>
struct PointerOf<T, 0> {
  using type = T;
};

template <class Exec, class T, int Rank>
using ViewOf = Kokkos::View<typename PointerOf<T, Rank>::type, Kokkos::LayoutStride, typename Exec::memory_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// The Tensor (already checked for rank and element type) as an unmanaged strided view.
template <class Exec, class T, int Rank>
ViewOf<Exec, T, Rank> view_of(const Tensor& t) {
  Kokkos::LayoutStride layout;
  for (int d = 0; d < Rank; ++d) {
    layout.dimension[d] = static_cast<std::size_t>(t.shape[d]);
    layout.stride[d] = static_cast<std::size_t>(t.strides[d]);
  }
  return ViewOf<Exec, T, Rank>(static_cast<T*>(t.data), layout);
}

inline uq::DecodeConfig decode_config(const DecodeSettings& d) {
  uq::DecodeConfig c;
  c.softmax_scale = d.scale;
  c.qg = d.qg;
  c.q_rotated = d.q_rotated;
  c.partitions = d.partitions;
  c.backend = d.backend;
  c.check = d.check;
  c.query_len = d.query_len;
  return c;
}

inline uq::DecodeShape decode_shape(const DecodeDims& d) {
  uq::DecodeShape s{d.max_seqs, d.num_kv_heads, d.qg, d.block_size, d.max_blocks_per_seq};
  s.max_query_len = d.max_query_len;
  s.max_query_tokens = d.max_query_tokens;
  return s;
}

inline uq::ScoreConfig score_config(const ScoreSettings& s) {
  uq::ScoreConfig c;
  c.query_len = s.query_len;
  c.init_blocks = s.init_blocks;
  c.local_blocks = s.local_blocks;
  c.backend = s.backend;
  c.check = s.check;
  return c;
}

inline uq::SelectConfig select_config(const SelectSettings& s) {
  uq::SelectConfig c;
  c.query_len = s.query_len;
  c.max_blocks = s.max_blocks;
  c.check = s.check;
  return c;
}

inline uq::Status sum(const uq::Status& a, const uq::Status& b) {
  uq::Status s;
  for (int i = 0; i < uq::kNumCounters; ++i) s.counts[i] = a.counts[i] + b.counts[i];
  return s;
}

// A host execution space completes its work before returning; wait anyway, so that the caller's
// next Python statement sees the results whatever the space's own rules are.
template <class Exec>
void finish_on_host() {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible) Exec().fence();
}

// One C++ object (a uq plan or writer) per stream the Python object has run on, built by
// `make(exec)`; the last one used is remembered for status() and path().
template <class Obj, class Instances>
class PerStream {
 public:
  template <class Make>
  PerStream(Instances& instances, Stream first, Make make) : instances_(instances), make_(std::move(make)) {
    get(first);
  }

  Obj& get(Stream s) {
    if (last_ != nullptr && s.handle == last_stream_.handle) return *last_;
    auto it = objects_.find(s.handle);
    if (it == objects_.end()) it = objects_.emplace(s.handle, make_(instances_.get(s))).first;
    last_stream_ = s;
    last_ = it->second.get();
    return *last_;
  }
  Obj& last() { return *last_; }
  const Obj& last() const { return *last_; }
  // The status counters of every object, summed, and their reset: a Python object's status
  // covers every stream it ran on.
  uq::Status summed_status() const {
    uq::Status s;
    for (const auto& [h, o] : objects_) s = sum(s, o->status());
    return s;
  }
  void reset_statuses() const {
    for (const auto& [h, o] : objects_) o->reset_status();
  }

 private:
  Instances& instances_;
  std::function<std::unique_ptr<Obj>(const typename Instances::exec_type&)> make_;
  std::map<std::uintptr_t, std::unique_ptr<Obj>> objects_;
  Stream last_stream_;
  Obj* last_ = nullptr;
};

template <class Exec, class Instances>
class DecodePlanOn final : public DecodePlanImpl {
  using Mem = typename Exec::memory_space;
  using Plan = uq::DecodePlan<Exec>;

 public:
  // The caller's uint8 workspace as it is (each plan checks its size, contiguity and
  // alignment), or one of workspace_bytes allocated here; the plans of every stream share it.
  DecodePlanOn(Instances& instances, const DecodeDims& dims, const DecodeSettings& d, const Tensor& workspace,
               Stream s)
      : shape_(decode_shape(dims)),
        cfg_(decode_config(d)),
        bytes_(Plan::workspace_bytes(shape_, cfg_)),
        caller_(workspace),
        owned_(workspace.data != nullptr
                   ? Kokkos::View<std::uint8_t*, Mem>()
                   : Kokkos::View<std::uint8_t*, Mem>(
                         Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq.DecodePlan workspace"), bytes_)),
        workspace_(workspace.data != nullptr ? view_of<Exec, std::uint8_t, 1>(workspace)
                                             : ViewOf<Exec, std::uint8_t, 1>(owned_.data(), Kokkos::LayoutStride(bytes_, 1))),
        plans_(instances, s,
               [this](const Exec& exec) { return std::make_unique<Plan>(exec, shape_, cfg_, workspace_); }) {}

  void run(const DecodeArgs& a, Stream s) override {
    const Plan& plan = plans_.get(s);
    const auto lse = a.lse.data != nullptr ? view_of<Exec, float, 2>(a.lse) : ViewOf<Exec, float, 2>();
    const auto q = view_of<Exec, const uq::bf16, 3>(a.q);
    const auto cache = view_of<Exec, const std::uint8_t, 4>(a.kv_cache);
    const auto tables = view_of<Exec, const std::int32_t, 2>(a.block_tables);
    const auto lens = view_of<Exec, const std::int32_t, 1>(a.seq_lens);
    if (a.query_start_loc.data != nullptr)
      plan.run(q, cache, tables, lens, view_of<Exec, const std::int32_t, 1>(a.query_start_loc),
               view_of<Exec, uq::bf16, 3>(a.out), lse);
    else
      plan.run(q, cache, tables, lens, view_of<Exec, uq::bf16, 3>(a.out), lse);
    finish_on_host<Exec>();
  }
  uq::Status status() const override { return plans_.last().status(); }
  void reset_status() override { plans_.last().reset_status(); }
  uq::Path path() const override { return plans_.last().path(); }
  std::string path_reason() const override { return plans_.last().path_reason(); }
  int launches_per_run() const override { return plans_.last().launches_per_run(); }
  int partitions() const override { return plans_.last().partitions(); }
  std::size_t workspace_bytes() const override { return bytes_; }

 private:
  uq::DecodeShape shape_;
  uq::DecodeConfig cfg_;
  std::size_t bytes_;
  Tensor caller_;  // keeps a caller's workspace exported while the plan lives
  Kokkos::View<std::uint8_t*, Mem> owned_;
  ViewOf<Exec, std::uint8_t, 1> workspace_;
  PerStream<Plan, Instances> plans_;
};

// Calls f(view) with the slot mapping as an int64 or int32 view (the two types the writers take).
template <class Exec, class F>
void with_slots(const Tensor& slots, F&& f) {
  if (slots.dtype == DType::i64)
    f(view_of<Exec, const std::int64_t, 1>(slots));
  else
    f(view_of<Exec, const std::int32_t, 1>(slots));
}

// Calls f(view) with index keys as a bf16 (bfloat16 or uint16 bits) or float view.
template <class Exec, class F>
void with_keys(const Tensor& keys, F&& f) {
  if (keys.dtype == DType::f32)
    f(view_of<Exec, const float, 2>(keys));
  else
    f(view_of<Exec, const uq::bf16, 2>(keys));
}

inline uq::WriteKvConfig kv_config(const WriterSettings& w) { return uq::WriteKvConfig{w.backend, w.check}; }
inline uq::IndexWriterConfig index_config(const WriterSettings& w) { return uq::IndexWriterConfig{w.backend, w.check}; }

template <class Exec, class Instances>
class KvWriterOn final : public KvWriterImpl {
  using Writer = uq::KvWriter<Exec>;

 public:
  KvWriterOn(Instances& instances, const WriterSettings& w, Stream s)
      : cfg_(kv_config(w)), writers_(instances, s, [this](const Exec& exec) { return std::make_unique<Writer>(exec, cfg_); }) {}

  void run(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& kv_cache, Stream s) override {
    const Writer& w = writers_.get(s);
    with_slots<Exec>(slots, [&](const auto& sl) {
      w.run(view_of<Exec, const uq::bf16, 3>(k), view_of<Exec, const uq::bf16, 3>(v), sl,
            view_of<Exec, std::uint8_t, 4>(kv_cache));
    });
    finish_on_host<Exec>();
  }
  uq::Status status() const override { return writers_.summed_status(); }
  void reset_status() override { writers_.reset_statuses(); }

 private:
  uq::WriteKvConfig cfg_;
  PerStream<Writer, Instances> writers_;
};

template <class Exec, class Instances>
class IndexKeyWriterOn final : public IndexKeyWriterImpl {
  using Writer = uq::IndexKeyWriter<Exec>;

 public:
  IndexKeyWriterOn(Instances& instances, const WriterSettings& w, Stream s)
      : cfg_(index_config(w)),
        writers_(instances, s, [this](const Exec& exec) { return std::make_unique<Writer>(exec, cfg_); }) {}

  void run(const Tensor& keys, const Tensor& slots, const Tensor& index_cache, Stream s) override {
    const Writer& w = writers_.get(s);
    with_keys<Exec>(keys, [&](const auto& kv) {
      with_slots<Exec>(slots, [&](const auto& sl) { w.run(kv, sl, view_of<Exec, std::uint8_t, 2>(index_cache)); });
    });
    finish_on_host<Exec>();
  }
  uq::Status status() const override { return writers_.summed_status(); }
  void reset_status() override { writers_.reset_statuses(); }

 private:
  uq::IndexWriterConfig cfg_;
  PerStream<Writer, Instances> writers_;
};

template <class Exec, class Instances>
class ScorePlanOn final : public ScorePlanImpl {
  using Plan = uq::ScorePlan<Exec>;

 public:
  ScorePlanOn(Instances& instances, const ScoreDims& dims, const ScoreSettings& c, Stream s)
      : shape_{dims.max_reqs, dims.query_len, dims.heads, dims.max_blocks},
        cfg_(score_config(c)),
        plans_(instances, s, [this](const Exec& exec) { return std::make_unique<Plan>(exec, shape_, cfg_); }) {}

  void run(const ScoreArgs& a, Stream s) override {
    const Plan& plan = plans_.get(s);
    plan.run(view_of<Exec, const std::uint8_t, 3>(a.q), view_of<Exec, const std::uint8_t, 2>(a.index_cache),
             view_of<Exec, const std::int32_t, 2>(a.block_tables), view_of<Exec, const std::int32_t, 1>(a.seq_lens),
             view_of<Exec, float, 3>(a.scores));
    finish_on_host<Exec>();
  }
  uq::Status status() const override { return plans_.summed_status(); }
  void reset_status() override { plans_.reset_statuses(); }
  uq::Path path() const override { return plans_.last().path(); }
  std::string path_reason() const override { return plans_.last().path_reason(); }

 private:
  uq::ScoreShape shape_;
  uq::ScoreConfig cfg_;
  PerStream<Plan, Instances> plans_;
};

template <class Exec, class Instances>
class BlockSelectorOn final : public BlockSelectorImpl {
  using Selector = uq::BlockSelector<Exec>;

 public:
  BlockSelectorOn(Instances& instances, const SelectSettings& c, Stream s)
      : cfg_(select_config(c)),
        selectors_(instances, s, [this](const Exec& exec) { return std::make_unique<Selector>(exec, cfg_); }) {}

  void run(const Tensor& scores, const Tensor& seq_lens, const Tensor& out, Stream s) override {
    selectors_.get(s).run(view_of<Exec, const float, 3>(scores), view_of<Exec, const std::int32_t, 1>(seq_lens),
                          view_of<Exec, std::int32_t, 3>(out));
    finish_on_host<Exec>();
  }
  uq::Status status() const override { return selectors_.summed_status(); }
  void reset_status() override { selectors_.reset_statuses(); }

 private:
  uq::SelectConfig cfg_;
  PerStream<Selector, Instances> selectors_;
};

// The Space of execution space Exec. Instances hands out the execution-space instance of a
// stream (exec_type get(Stream)), caches what it creates, and drops it on clear().
template <class Exec, class Instances>
class SpaceOn final : public Space {
 public:
  SpaceOn(const char* name, Device device, bool takes_streams)
      : name_(name), device_(device), takes_streams_(takes_streams) {}

  const char* name() const override { return name_; }
  Device device() const override { return device_; }
  bool takes_streams() const override { return takes_streams_; }

  void write_kv(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& kv_cache, const WriterSettings& w,
                Stream s) override {
    const Exec exec = instances_.get(s);
    with_slots<Exec>(slots, [&](const auto& sl) {
      uq::write_kv(exec, view_of<Exec, const uq::bf16, 3>(k), view_of<Exec, const uq::bf16, 3>(v), sl,
                   view_of<Exec, std::uint8_t, 4>(kv_cache), kv_config(w));
    });
    finish_on_host<Exec>();
  }

  void decode(const DecodeArgs& a, const DecodeSettings& d, Stream s) override {
    const Exec exec = instances_.get(s);
    const auto lse = a.lse.data != nullptr ? view_of<Exec, float, 2>(a.lse) : ViewOf<Exec, float, 2>();
    const auto q = view_of<Exec, const uq::bf16, 3>(a.q);
    const auto cache = view_of<Exec, const std::uint8_t, 4>(a.kv_cache);
    const auto tables = view_of<Exec, const std::int32_t, 2>(a.block_tables);
    const auto lens = view_of<Exec, const std::int32_t, 1>(a.seq_lens);
    if (a.query_start_loc.data != nullptr)
      uq::decode(exec, q, cache, tables, lens, view_of<Exec, const std::int32_t, 1>(a.query_start_loc),
                 view_of<Exec, uq::bf16, 3>(a.out), lse, decode_config(d));
    else
      uq::decode(exec, q, cache, tables, lens, view_of<Exec, uq::bf16, 3>(a.out), lse, decode_config(d));
    finish_on_host<Exec>();
  }

  void rotate_query(const Tensor& q, const Tensor& q_rot, Stream s) override {
    const Exec exec = instances_.get(s);
    uq::rotate_query(exec, view_of<Exec, const uq::bf16, 3>(q), view_of<Exec, float, 3>(q_rot));
    finish_on_host<Exec>();
  }

  void write_index_keys(const Tensor& keys, const Tensor& slots, const Tensor& index_cache, const WriterSettings& w,
                        Stream s) override {
    const Exec exec = instances_.get(s);
    with_keys<Exec>(keys, [&](const auto& kv) {
      with_slots<Exec>(slots, [&](const auto& sl) {
        uq::write_index_keys(exec, kv, sl, view_of<Exec, std::uint8_t, 2>(index_cache), index_config(w));
      });
    });
    finish_on_host<Exec>();
  }

  void score(const ScoreArgs& a, const ScoreSettings& c, Stream s) override {
    const Exec exec = instances_.get(s);
    uq::score(exec, view_of<Exec, const std::uint8_t, 3>(a.q), view_of<Exec, const std::uint8_t, 2>(a.index_cache),
              view_of<Exec, const std::int32_t, 2>(a.block_tables), view_of<Exec, const std::int32_t, 1>(a.seq_lens),
              view_of<Exec, float, 3>(a.scores), score_config(c));
    finish_on_host<Exec>();
  }

  void select_blocks(const Tensor& scores, const Tensor& seq_lens, const Tensor& out, const SelectSettings& c,
                     Stream s) override {
    const Exec exec = instances_.get(s);
    uq::select_blocks(exec, view_of<Exec, const float, 3>(scores), view_of<Exec, const std::int32_t, 1>(seq_lens),
                      view_of<Exec, std::int32_t, 3>(out), select_config(c));
    finish_on_host<Exec>();
  }

  std::unique_ptr<DecodePlanImpl> decode_plan(const DecodeDims& dims, const DecodeSettings& d, const Tensor& workspace,
                                              Stream s) override {
    return std::make_unique<DecodePlanOn<Exec, Instances>>(instances_, dims, d, workspace, s);
  }
  std::unique_ptr<KvWriterImpl> kv_writer(const WriterSettings& w, Stream s) override {
    return std::make_unique<KvWriterOn<Exec, Instances>>(instances_, w, s);
  }
  std::unique_ptr<IndexKeyWriterImpl> index_key_writer(const WriterSettings& w, Stream s) override {
    return std::make_unique<IndexKeyWriterOn<Exec, Instances>>(instances_, w, s);
  }
  std::unique_ptr<ScorePlanImpl> score_plan(const ScoreDims& dims, const ScoreSettings& c, Stream s) override {
    return std::make_unique<ScorePlanOn<Exec, Instances>>(instances_, dims, c, s);
  }
  std::unique_ptr<BlockSelectorImpl> block_selector(const SelectSettings& c, Stream s) override {
    return std::make_unique<BlockSelectorOn<Exec, Instances>>(instances_, c, s);
  }

  void synchronize(Stream s) override { instances_.get(s).fence(); }
  void release() override { instances_.clear(); }

 private:
  const char* name_;
  Device device_;
  bool takes_streams_;
  Instances instances_;
};

}  // namespace uqpy
