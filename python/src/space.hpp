// The seam between the Python-facing code (no Kokkos types) and the code that runs uq on one
// Kokkos execution space (space_impl.hpp, compiled once per space: space_host.cpp, and
// space_cuda.cpp in CUDA builds). Arguments arrive as checked Tensors; each space wraps them as
// unmanaged strided Kokkos views in its own memory space and calls the C++ API.
#pragma once

#include "tensor.hpp"
#include "uq/backend.hpp"
#include "uq/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace uqpy {

// A CUDA/HIP stream handle (cudaStream_t as an integer); 0 is the legacy default stream.
// Host execution spaces take none.
struct Stream {
  std::uintptr_t handle = 0;
  bool operator<(const Stream& o) const { return handle < o.handle; }
};

// uq::DecodeConfig / DecodeShape and friends without their Kokkos headers.
struct DecodeSettings {
  float scale = 1.0f / 16.0f;
  int qg = 0;
  bool q_rotated = false;
  int partitions = 0;
  uq::Backend backend = uq::Backend::Auto;
  bool check = true;
  int query_len = 1;  // the uniform form of several query tokens per sequence (1: one each)
};
struct DecodeDims {
  int max_seqs = 0, num_kv_heads = 0, qg = 0, block_size = 0, max_blocks_per_seq = 0;
  int max_query_len = 1, max_query_tokens = 0;  // several query tokens per sequence
};
struct WriterSettings {
  uq::Backend backend = uq::Backend::Auto;
  bool check = true;
};
struct ScoreSettings {
  int query_len = 1, init_blocks = 0, local_blocks = 0;
  uq::Backend backend = uq::Backend::Auto;
  bool check = true;
};
struct ScoreDims {
  int max_reqs = 0, query_len = 1, heads = 1, max_blocks = 0;
};
struct SelectSettings {
  int query_len = 1, max_blocks = 0;
  bool check = true;
};

struct DecodeArgs {
  Tensor q, kv_cache, block_tables, seq_lens, out;
  Tensor lse;              // data == nullptr: no lse
  Tensor query_start_loc;  // data == nullptr: none (one query token per sequence, or query_len each)
};
struct ScoreArgs {
  Tensor q, index_cache, block_tables, seq_lens, scores;
};

// A reusable object (plan or writer) on one space. Its work goes to the stream of each run: the
// space keeps one execution-space instance per stream (created on a stream's first use, which
// must not happen while that stream is being captured into a graph).
class DecodePlanImpl {
 public:
  virtual ~DecodePlanImpl() = default;
  virtual void run(const DecodeArgs& a, Stream s) = 0;
  virtual uq::Status status() const = 0;
  virtual void reset_status() = 0;
  virtual uq::Path path() const = 0;
  virtual std::string path_reason() const = 0;
  virtual int launches_per_run() const = 0;
  virtual int partitions() const = 0;
  virtual std::size_t workspace_bytes() const = 0;
};

class KvWriterImpl {
 public:
  virtual ~KvWriterImpl() = default;
  virtual void run(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& kv_cache, Stream s) = 0;
  virtual uq::Status status() const = 0;
  virtual void reset_status() = 0;
};

class IndexKeyWriterImpl {
 public:
  virtual ~IndexKeyWriterImpl() = default;
  virtual void run(const Tensor& keys, const Tensor& slots, const Tensor& index_cache, Stream s) = 0;
  virtual uq::Status status() const = 0;
  virtual void reset_status() = 0;
};

class ScorePlanImpl {
 public:
  virtual ~ScorePlanImpl() = default;
  virtual void run(const ScoreArgs& a, Stream s) = 0;
  virtual uq::Status status() const = 0;
  virtual void reset_status() = 0;
  virtual uq::Path path() const = 0;
  virtual std::string path_reason() const = 0;
};

class BlockSelectorImpl {
 public:
  virtual ~BlockSelectorImpl() = default;
  virtual void run(const Tensor& scores, const Tensor& seq_lens, const Tensor& out, Stream s) = 0;
  virtual uq::Status status() const = 0;
  virtual void reset_status() = 0;
};

// One Kokkos execution space of this build. Every call returns once its work is issued: on a
// host space that is when it is done; on a device it runs on the stream (a call with check =
// true waits for it, to read the status counters).
class Space {
 public:
  virtual ~Space() = default;
  virtual const char* name() const = 0;  // the Kokkos execution space: "Serial", "OpenMP", "Cuda"
  virtual Device device() const = 0;     // where its memory is
  virtual bool takes_streams() const = 0;

  virtual void write_kv(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& kv_cache,
                        const WriterSettings& w, Stream s) = 0;
  virtual void decode(const DecodeArgs& a, const DecodeSettings& d, Stream s) = 0;
  virtual void rotate_query(const Tensor& q, const Tensor& q_rot, Stream s) = 0;
  virtual void write_index_keys(const Tensor& keys, const Tensor& slots, const Tensor& index_cache,
                                const WriterSettings& w, Stream s) = 0;
  virtual void score(const ScoreArgs& a, const ScoreSettings& c, Stream s) = 0;
  virtual void select_blocks(const Tensor& scores, const Tensor& seq_lens, const Tensor& out, const SelectSettings& c,
                             Stream s) = 0;

  // The plan's workspace: `workspace` (a uint8 Tensor in this space's memory) or, when its data
  // is null, one the plan allocates. Each object is built at once on stream `s` (so that its
  // errors come here), and again for each other stream a run uses.
  virtual std::unique_ptr<DecodePlanImpl> decode_plan(const DecodeDims& dims, const DecodeSettings& d,
                                                      const Tensor& workspace, Stream s) = 0;
  virtual std::unique_ptr<KvWriterImpl> kv_writer(const WriterSettings& w, Stream s) = 0;
  virtual std::unique_ptr<IndexKeyWriterImpl> index_key_writer(const WriterSettings& w, Stream s) = 0;
  virtual std::unique_ptr<ScorePlanImpl> score_plan(const ScoreDims& dims, const ScoreSettings& c, Stream s) = 0;
  virtual std::unique_ptr<BlockSelectorImpl> block_selector(const SelectSettings& c, Stream s) = 0;

  // Waits for the work issued on the stream.
  virtual void synchronize(Stream s) = 0;
  // Drops the cached execution-space instances (before Kokkos::finalize).
  virtual void release() = 0;
};

// Bytes of a caller-provided decode workspace (uq::DecodePlan::workspace_bytes).
std::size_t decode_workspace_bytes(const DecodeDims& dims, const DecodeSettings& d);
// The alignment such a workspace needs (uq::kDecodeWorkspaceAlignment).
std::size_t decode_workspace_alignment();

// The spaces of this build: the host one always; the device one in CUDA builds (null otherwise).
std::unique_ptr<Space> make_host_space();
std::unique_ptr<Space> make_device_space();

}  // namespace uqpy
