// Argument expectations and the host-only float32 conversions (args.hpp).
#include "args.hpp"

#include "uq/types.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace uqpy {
namespace {

// Calls f(src element pointer offset, destination index) over every element of a strided host
// array, destination in row-major order.
template <class F>
void for_each_element(const Tensor& t, F&& f) {
  const std::int64_t n = t.numel();
  if (n == 0) return;
  std::array<std::int64_t, kMaxRank> idx{};
  std::int64_t offset = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    f(offset, i);
    for (int d = t.ndim - 1; d >= 0; --d) {  // odometer step
      offset += t.strides[d];
      if (++idx[d] < t.shape[d]) break;
      offset -= t.strides[d] * t.shape[d];
      idx[d] = 0;
    }
  }
}

// A host float32 array converted element by element into a new row-major array of Out.
template <class Out, class Convert>
Tensor converted(const Tensor& src, DType to, const char* to_text, Convert&& convert) {
  auto buffer = std::make_shared<std::vector<Out>>(static_cast<std::size_t>(src.numel()));
  const float* in = static_cast<const float*>(src.data);
  Out* out = buffer->data();
  for_each_element(src, [&](std::int64_t offset, std::int64_t i) { out[i] = convert(in[offset]); });
  Tensor t = src;
  t.data = buffer->data();
  t.dtype = to;
  t.dtype_text = to_text;
  t.writable = false;
  std::int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.shape[d];
  }
  t.owner = buffer;  // the source's export is no longer needed
  return t;
}

std::string rank_words(int rank, const char* shape_words) {
  return "rank " + std::to_string(rank) + " " + shape_words;
}

}  // namespace

void require_rank(const Tensor& t, const Arg& a, int rank, const char* shape_words) {
  if (t.ndim != rank) fail(a, rank_words(rank, shape_words), "rank " + std::to_string(t.ndim) + " " + t.shape_text());
}

void require_dtype(const Tensor& t, const Arg& a, std::initializer_list<DType> allowed, const char* words) {
  if (std::find(allowed.begin(), allowed.end(), t.dtype) == allowed.end()) fail(a, words, t.dtype_text);
}

void require_output(const Tensor& t, const Arg& a) {
  if (!t.writable) fail(a, "a writable array (an output)", "a read-only array");
  // Sorted by stride, each dimension must step over the whole extent of the smaller ones.
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, extent) of extents > 1
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] > 1) dims.emplace_back(t.strides[d], t.shape[d]);
  std::sort(dims.begin(), dims.end());
  std::int64_t reach = 1;  // elements spanned by the dimensions so far
  for (const auto& [stride, extent] : dims) {
    if (stride < reach)
      fail(a, "an output whose elements do not share memory (no zero or overlapping strides)",
           "strides " + t.strides_text() + " for shape " + t.shape_text());
    reach = stride * extent;
  }
}

void require_device(const Tensor& t, const Arg& a, const Device& call_device, const std::string& whose) {
  if (t.device != call_device)
    fail(a, "an array on the device of " + whose + " (" + device_name(call_device) + ")",
         "an array on " + device_name(t.device));
}

Tensor bf16_input(py::handle obj, const Arg& a, int rank, const char* shape_words) {
  Tensor t = import_tensor(obj, a);
  require_rank(t, a, rank, shape_words);
  if (t.dtype == DType::bf16 || t.dtype == DType::u16) return t;
  if (t.dtype == DType::f32 && t.device.kind == DeviceKind::cpu)
    return converted<std::uint16_t>(t, DType::bf16, "bfloat16",
                                    [](float x) { return uq::codec::float_to_bf16(x).bits; });
  fail(a, "bfloat16 (or uint16 holding bf16 bits; float32 only in host memory, rounded to bf16)",
       t.dtype_text + " on " + device_name(t.device));
}

Tensor bf16_output(py::handle obj, const Arg& a, int rank, const char* shape_words) {
  Tensor t = import_tensor(obj, a);
  require_rank(t, a, rank, shape_words);
  require_dtype(t, a, {DType::bf16, DType::u16}, "bfloat16 (or uint16 holding bf16 bits)");
  require_output(t, a);
  return t;
}

Tensor e4m3_input(py::handle obj, const Arg& a, int rank, const char* shape_words) {
  Tensor t = import_tensor(obj, a);
  require_rank(t, a, rank, shape_words);
  if (t.dtype == DType::u8) return t;
  if (t.dtype == DType::f32 && t.device.kind == DeviceKind::cpu)
    return converted<std::uint8_t>(t, DType::u8, "uint8", [](float x) { return uq::codec::float_to_e4m3(x); });
  fail(a, "uint8 holding E4M3 bits (float32 only in host memory, rounded to E4M3)",
       t.dtype_text + " on " + device_name(t.device));
}

Tensor typed_input(py::handle obj, const Arg& a, int rank, const char* shape_words, std::initializer_list<DType> allowed,
                   const char* dtype_words) {
  Tensor t = import_tensor(obj, a);
  require_rank(t, a, rank, shape_words);
  require_dtype(t, a, allowed, dtype_words);
  return t;
}

Tensor typed_output(py::handle obj, const Arg& a, int rank, const char* shape_words,
                    std::initializer_list<DType> allowed, const char* dtype_words) {
  Tensor t = typed_input(obj, a, rank, shape_words, allowed, dtype_words);
  require_output(t, a);
  return t;
}

}  // namespace uqpy
