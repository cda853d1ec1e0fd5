// The demo's accuracy checks on a sample of sequences (all their query heads):
//  - against the float64 reference of the spec's decode meaning (reference/,
//    uqref::uq_decode, independent of src/), within decode_error_bound();
//  - against unquantised attention: softmax(scale q.k) v in double on the original
//    bf16 q, K, V (no rotation, no E4M3, no FP4), as a cosine similarity. This is the
//    quality of the 4-bit cache itself, not a correctness bound.
#pragma once

#include "cli/decode_tolerance.hpp"
#include "cli/demo_data.hpp"

#include "uq/types.hpp"

#include <cstdint>
#include <vector>

namespace uq {
namespace cli {
namespace demo {

// Everything the checks read, on the host.
struct CheckInputs {
  const LayerModel* model = nullptr;
  const std::vector<bf16>* q = nullptr;               // [seqs, Hq, 256]
  const std::vector<std::uint8_t>* cache = nullptr;   // [num_blocks, block_size, Hk, slot_bytes]
  std::int64_t num_blocks = 0;
  int slot_bytes = 272;
  const std::vector<std::int32_t>* block_tables = nullptr;  // [seqs, blocks_per_seq]
  const std::vector<std::int32_t>* seq_lens = nullptr;      // [seqs]
  double scale = 1.0 / 16.0;
  std::vector<int> sample;  // the sequences checked
  // Original bf16 K and V of each sampled sequence: [context, Hk, 256].
  std::vector<std::vector<bf16>> k, v;
};

// Reference outputs of the sampled sequences, computed once.
struct References {
  std::vector<std::vector<double>> uq;         // per sample: uqref meaning [Hq][256]
  std::vector<std::vector<double>> vmax;       // per sample: [Hq][256]
  std::vector<std::vector<double>> score_abs;  // per sample: [Hq]
  std::vector<std::vector<double>> bf16;       // per sample: unquantised attention [Hq][256]
  double effective_tokens_median = 0;          // exp(entropy) of the unquantised attention
  double top_weight_median = 0;                // largest softmax weight per head, median
};

References compute_references(const CheckInputs& in);

struct CheckResult {
  double max_abs_error = 0;      // vs the uqref meaning
  double max_error_ratio = 0;    // max |err| / decode_error_bound
  double min_cosine_bf16 = 1;    // vs unquantised attention, worst head
  double mean_cosine_bf16 = 0;
  double ref_min_cosine_bf16 = 1;  // the same for the reference itself: the format's own loss
  double ref_mean_cosine_bf16 = 0;
  bool ok() const { return max_error_ratio <= 1.0; }
};

// out: a decode output [seqs, Hq, 256] (host).
CheckResult check_output(const CheckInputs& in, const References& ref, const std::vector<bf16>& out,
                         const DecodeErrorModel& error_model);

// The multi-token (MTP) check: per sampled sequence, its `ql` query tokens (rows b * ql + j of
// `q_mtp`, the sequence's last ql tokens being the new ones: spec ultraquant.md §5.9), from the
// float64 reference with query_start_loc.
struct MtpReferences {
  int ql = 0;
  std::vector<std::vector<double>> uq;         // per sample: [ql][Hq][256]
  std::vector<std::vector<double>> vmax;       // per sample: [ql][Hq][256]
  std::vector<std::vector<double>> score_abs;  // per sample: [ql][Hq]
};

MtpReferences compute_mtp_references(const CheckInputs& in, const std::vector<bf16>& q_mtp, int ql);

// out: a multi-token decode output [seqs * ql, Hq, 256] (host); the cosines are not computed.
CheckResult check_mtp_output(const CheckInputs& in, const MtpReferences& ref, const std::vector<bf16>& out,
                             const DecodeErrorModel& error_model);

// Cosine similarity of two vectors (1 when both are zero).
double cosine(const double* a, const double* b, int n);

}  // namespace demo
}  // namespace cli
}  // namespace uq
