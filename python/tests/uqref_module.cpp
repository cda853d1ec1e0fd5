// _uqref: the test-only module of the Python tests. It exposes the project's float64 reference
// (reference/, the ground truth of the C++ tests), the decode and lse tolerances of the C++ tests
// (tests/support), and a DLPack producer over NumPy memory that can claim any dtype, shape,
// strides or device: NumPy itself exports no bf16 and only host arrays, and the binding's
// bf16, stride and device handling must be tested without a GPU.
#include "support/decode_tolerance.hpp"
#include "support/lse_tolerance.hpp"
#include "support/score_tolerance.hpp"
#include "uqref.hpp"

#include "../src/dlpack_header.hpp"
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace py = pybind11;

namespace {

template <class T>
using CArray = py::array_t<T, py::array::c_style>;  // no forcecast: a wrong dtype is a test bug

template <class T>
void require_shape(const CArray<T>& a, std::initializer_list<py::ssize_t> shape, const char* what) {
  if (static_cast<std::size_t>(a.ndim()) != shape.size()) throw std::invalid_argument(std::string(what) + ": rank");
  int d = 0;
  for (py::ssize_t e : shape) {
    if (e >= 0 && a.shape(d) != e) throw std::invalid_argument(std::string(what) + ": shape");
    ++d;
  }
}

// query_start_loc: None (one query token per sequence) or int32 [num_seqs + 1] (several, spec
// §5.9: q's rows are then query tokens).
py::dict decode(const CArray<std::uint16_t>& q, const CArray<std::uint8_t>& cache, const CArray<std::int32_t>& tables,
                const CArray<std::int32_t>& lens, int qg, double scale, bool q_rotated, py::object query_start_loc) {
  require_shape(q, {-1, -1, 256}, "q");
  require_shape(cache, {-1, -1, -1, -1}, "cache");
  const int B = static_cast<int>(q.shape(0)), hq = static_cast<int>(q.shape(1));  // B: query tokens with qsl
  const int S = static_cast<int>(lens.shape(0));                                  // sequences
  require_shape(tables, {S, -1}, "tables");
  CArray<std::int32_t> starts;
  if (!query_start_loc.is_none()) {
    starts = query_start_loc.cast<CArray<std::int32_t>>();
    require_shape(starts, {S + 1}, "query_start_loc");
  } else {
    require_shape(lens, {B}, "lens");
  }
  uqref::DecodeInputs in{};
  in.q = q.data();
  in.q_stride_seq = static_cast<std::int64_t>(hq) * 256;
  in.q_stride_head = 256;
  in.cache = cache.data();
  in.num_blocks = cache.shape(0);
  in.block_size = static_cast<int>(cache.shape(1));
  in.num_kv_heads = static_cast<int>(cache.shape(2));
  in.slot_bytes = static_cast<int>(cache.shape(3));
  in.block_tables = tables.data();
  in.max_blocks_per_seq = static_cast<int>(tables.shape(1));
  in.seq_lens = lens.data();
  in.num_seqs = S;
  in.qg = qg;
  in.scale = scale;
  in.q_rotated = q_rotated;
  if (!query_start_loc.is_none()) {
    in.query_start_loc = starts.data();
    in.num_query_tokens = B;
  }
  const uqref::DecodeResult r = uqref::uq_decode(in);
  const std::vector<py::ssize_t> rows{B, hq}, elems{B, hq, 256};
  py::array_t<double> out(elems), tol(elems), lse(rows), lse_tol(rows);
  py::array_t<std::int64_t> attended(rows);
  py::array_t<bool> nonfinite(rows);
  for (std::size_t row = 0; row < static_cast<std::size_t>(B) * hq; ++row) {
    for (std::size_t e = 0; e < 256; ++e) {
      const std::size_t i = row * 256 + e;
      out.mutable_data()[i] = r.out[i];
      tol.mutable_data()[i] = uqtest::decode_tolerance(r.out[i], r.vmax[i], r.score_abs[row], r.attended[row]);
    }
    lse.mutable_data()[row] = r.lse[row];
    lse_tol.mutable_data()[row] = uqtest::lse_tolerance(r.lse[row], r.score_abs[row], r.attended[row]);
    attended.mutable_data()[row] = r.attended[row];
    nonfinite.mutable_data()[row] = r.nonfinite_q[row] != 0;
  }
  py::dict d;
  d["out"] = out;
  d["tol"] = tol;
  d["lse"] = lse;
  d["lse_tol"] = lse_tol;
  d["attended"] = attended;
  d["nonfinite_q"] = nonfinite;
  return d;
}

py::tuple write_kv(const CArray<std::uint16_t>& k, const CArray<std::uint16_t>& v, const CArray<std::int64_t>& slots,
                   CArray<std::uint8_t> cache) {
  require_shape(k, {-1, -1, 256}, "k");
  require_shape(v, {k.shape(0), k.shape(1), 256}, "v");
  require_shape(slots, {k.shape(0)}, "slots");
  require_shape(cache, {-1, -1, k.shape(1), -1}, "cache");
  const uqref::WriteCounts c =
      uqref::uq_write_kv(k.data(), v.data(), slots.data(), k.shape(0), static_cast<int>(k.shape(1)),
                         cache.mutable_data(), cache.shape(0), static_cast<int>(cache.shape(1)),
                         static_cast<int>(cache.shape(3)));
  return py::make_tuple(c.bad_slots, c.nonfinite_rows);
}

py::tuple write_index_keys(const CArray<float>& keys, const CArray<std::int64_t>& slots, CArray<std::uint8_t> cache) {
  require_shape(keys, {-1, 128}, "keys");
  require_shape(slots, {keys.shape(0)}, "slots");
  require_shape(cache, {-1, 9216}, "cache");
  const uqref::WriteCounts c =
      uqref::nv_write_index_keys(keys.data(), slots.data(), keys.shape(0), cache.mutable_data(), cache.shape(0));
  return py::make_tuple(c.bad_slots, c.nonfinite_rows);
}

void score(const CArray<std::uint8_t>& q, const CArray<std::uint8_t>& cache, const CArray<std::int32_t>& tables,
           const CArray<std::int32_t>& lens, int query_len, int init_blocks, int local_blocks, CArray<float> scores) {
  require_shape(q, {-1, -1, 128}, "q");
  const int heads = static_cast<int>(q.shape(1));
  require_shape(scores, {heads, q.shape(0), -1}, "scores");
  uqref::ScoreInputs in{};
  in.q = q.data();
  in.q_stride_row = static_cast<std::int64_t>(heads) * 128;
  in.q_stride_head = 128;
  in.cache = cache.data();
  in.num_blocks = cache.shape(0);
  in.block_tables = tables.data();
  in.max_blocks = static_cast<int>(tables.shape(1));
  in.seq_lens = lens.data();
  in.num_reqs = static_cast<int>(lens.shape(0));
  in.query_len = query_len;
  in.heads = heads;
  in.init_blocks = init_blocks;
  in.local_blocks = local_blocks;
  uqref::nv_score(in, scores.mutable_data(), scores.shape(2));
}

// The C++ scorer tests' tolerance of each score entry (support/score_tolerance.hpp), with A bounded
// by sum_d |q[d]| max_t |k̂[t][d]| over the entry's page, as test_index_common.hpp bounds it. Entries
// whose page id is outside the cache (never read: no computed score) get 0.
py::array_t<double> score_tolerance(const CArray<std::uint8_t>& q, const CArray<std::uint8_t>& cache,
                                    const CArray<std::int32_t>& tables, int query_len, const CArray<float>& ref) {
  require_shape(q, {-1, -1, 128}, "q");
  require_shape(cache, {-1, 9216}, "cache");
  const py::ssize_t heads = q.shape(1), rows = q.shape(0), S = ref.shape(2), num_blocks = cache.shape(0);
  require_shape(ref, {heads, rows, -1}, "ref");
  std::vector<double> key_max(static_cast<std::size_t>(num_blocks) * 128, 0.0);
  for (py::ssize_t p = 0; p < num_blocks; ++p)
    for (int t = 0; t < 128; ++t)
      for (int d = 0; d < 128; ++d) {
        double& m = key_max[static_cast<std::size_t>(p) * 128 + d];
        m = std::max(m, std::fabs(uqref::nv_dequant(cache.data() + p * 9216, t, d)));
      }
  py::array_t<double> tol(std::vector<py::ssize_t>{heads, rows, S});
  const py::ssize_t width = tables.shape(1);
  for (py::ssize_t h = 0; h < heads; ++h)
    for (py::ssize_t row = 0; row < rows; ++row)
      for (py::ssize_t b = 0; b < S; ++b) {
        const py::ssize_t i = (h * rows + row) * S + b;
        const std::int32_t page = b < width ? tables.data()[(row / query_len) * width + b] : -1;
        double A = 0.0;
        if (page >= 0 && page < num_blocks)
          for (int d = 0; d < 128; ++d)
            A += std::fabs(uqref::e4m3_value(q.data()[(row * heads + h) * 128 + d])) *
                 key_max[static_cast<std::size_t>(page) * 128 + d];
        tol.mutable_data()[i] = page >= 0 && page < num_blocks ? uqtest::score_tolerance(ref.data()[i], A) : 0.0;
      }
  return tol;
}

py::array_t<std::int32_t> select_blocks(const CArray<float>& scores, const CArray<std::int32_t>& lens, int query_len, int k) {
  require_shape(scores, {-1, -1, -1}, "scores");
  py::array_t<std::int32_t> out(std::vector<py::ssize_t>{scores.shape(0), scores.shape(1), k});
  uqref::nv_select(scores.data(), scores.shape(2), lens.data(), static_cast<int>(lens.shape(0)), query_len,
                   static_cast<int>(scores.shape(0)), k, out.mutable_data());
  return out;
}

py::array_t<float> wht256(const CArray<float>& x) {
  if (x.size() % 256 != 0) throw std::invalid_argument("wht256: a multiple of 256 values");
  py::array_t<float> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  for (py::ssize_t r = 0; r < x.size() / 256; ++r) uqref::wht256_fp32(x.data() + r * 256, out.mutable_data() + r * 256);
  return out;
}

py::array_t<std::uint16_t> bf16_round(const CArray<float>& x) {
  py::array_t<std::uint16_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  for (py::ssize_t i = 0; i < x.size(); ++i) out.mutable_data()[i] = uqref::bf16_round(x.data()[i]);
  return out;
}

py::array_t<std::uint8_t> e4m3_round(const CArray<float>& x) {
  py::array_t<std::uint8_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  for (py::ssize_t i = 0; i < x.size(); ++i) out.mutable_data()[i] = uqref::e4m3_round(x.data()[i]);
  return out;
}

// ---- a DLPack producer for the tests

int g_live_exports = 0;  // exports made and not yet released by their consumer

struct Export {
  py::object keep;  // the NumPy array whose memory the export describes
  std::vector<std::int64_t> shape, strides;
  DLManagedTensor managed{};
};

void delete_export(DLManagedTensor* m) {
  py::gil_scoped_acquire gil;
  delete static_cast<Export*>(m->manager_ctx);
  --g_live_exports;
}

// Describes `base`'s memory (from its first byte plus byte_offset) as a tensor of the given
// DLPack dtype, shape and element strides, on the given DLPack device.
struct Producer {
  py::array base;
  int code, bits, device_type, device_id;
  std::vector<std::int64_t> shape, strides;
  std::int64_t byte_offset;

  py::object dlpack(py::object stream) const {
    (void)stream;
    auto* e = new Export{base, shape, strides, {}};
    e->managed.dl_tensor.data = const_cast<void*>(base.data());
    e->managed.dl_tensor.device = DLDevice{static_cast<DLDeviceType>(device_type), device_id};
    e->managed.dl_tensor.ndim = static_cast<int>(shape.size());
    e->managed.dl_tensor.dtype = DLDataType{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
    e->managed.dl_tensor.shape = e->shape.data();
    e->managed.dl_tensor.strides = e->strides.empty() ? nullptr : e->strides.data();
    e->managed.dl_tensor.byte_offset = static_cast<std::uint64_t>(byte_offset);
    e->managed.manager_ctx = e;
    e->managed.deleter = &delete_export;
    ++g_live_exports;
    PyObject* capsule = PyCapsule_New(&e->managed, "dltensor", [](PyObject* c) {
      // Not taken by a consumer: the producer's capsule destructor releases the export.
      if (PyCapsule_IsValid(c, "dltensor")) {
        auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
        m->deleter(m);
      }
    });
    return py::reinterpret_steal<py::object>(capsule);
  }
  py::tuple device() const { return py::make_tuple(device_type, device_id); }
};

}  // namespace

PYBIND11_MODULE(_uqref, m) {
  m.doc() = "Test-only: uq's float64 reference, the C++ tests' tolerances, and a DLPack producer.";
  m.def("decode", &decode, py::arg("q"), py::arg("cache"), py::arg("tables"), py::arg("lens"), py::arg("qg"),
        py::arg("scale"), py::arg("q_rotated"), py::arg("query_start_loc") = py::none(),
        "uqref::uq_decode on contiguous arrays: out, tol (the C++ tests' decode_tolerance), lse, lse_tol, "
        "attended, nonfinite_q; with query_start_loc, q's rows are query tokens (spec section 5.9).");
  m.def("write_kv", &write_kv, "uqref::uq_write_kv, cache in place; (bad_slots, nonfinite_rows).");
  m.def("write_index_keys", &write_index_keys, "uqref::nv_write_index_keys, cache in place.");
  m.def("score", &score, "uqref::nv_score into scores (only entries of visible blocks are written).");
  m.def("score_tolerance", &score_tolerance, "The C++ scorer tests' tolerance per score entry.");
  m.def("select", &select_blocks, "uqref::nv_select.");
  m.def("wht256", &wht256, "uqref::wht256_fp32 over rows of 256.");
  m.def("bf16_round", &bf16_round, "uqref::bf16_round element-wise.");
  m.def("e4m3_round", &e4m3_round, "uqref::e4m3_round element-wise.");
  py::class_<Producer>(m, "Producer")
      .def("__dlpack__", &Producer::dlpack, py::arg("stream") = py::none())
      .def("__dlpack_device__", &Producer::device);
  m.def(
      "producer",
      [](py::array base, int code, int bits, std::vector<std::int64_t> shape, py::object strides, int device_type,
         int device_id, std::int64_t byte_offset) {
        std::vector<std::int64_t> st;
        if (!strides.is_none()) st = strides.cast<std::vector<std::int64_t>>();
        return Producer{base, code, bits, device_type, device_id, std::move(shape), std::move(st), byte_offset};
      },
      py::arg("base"), py::arg("code"), py::arg("bits"), py::arg("shape"), py::arg("strides") = py::none(),
      py::arg("device_type") = 1, py::arg("device_id") = 0, py::arg("byte_offset") = 0);
  m.def("live_exports", []() { return g_live_exports; });
}
