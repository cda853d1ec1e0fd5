// DLPack and buffer-protocol import of array arguments (tensor.hpp).
#include "tensor.hpp"

#include "dlpack_header.hpp"

#include <cstring>
#include <string>
#include <utility>

namespace uqpy {
namespace {

// DLPack's capsule names: a producer hands out "dltensor"; the consumer that takes the tensor
// renames it "used_dltensor" and then owns the call of its deleter.
constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";

DType dtype_of(const DLDataType& t) {
  if (t.lanes != 1) return DType::other;
  switch (t.code) {
    case kDLBfloat: return t.bits == 16 ? DType::bf16 : DType::other;
    case kDLFloat: return t.bits == 32 ? DType::f32 : DType::other;
    case kDLUInt:
      if (t.bits == 8) return DType::u8;
      if (t.bits == 16) return DType::u16;
      return DType::other;
    case kDLInt:
      if (t.bits == 32) return DType::i32;
      if (t.bits == 64) return DType::i64;
      return DType::other;
    default: return DType::other;
  }
}

std::string dlpack_dtype_text(const DLDataType& t) {
  std::string s;
  switch (t.code) {
    case kDLInt: s = "int"; break;
    case kDLUInt: s = "uint"; break;
    case kDLFloat: s = "float"; break;
    case kDLBfloat: s = "bfloat"; break;
    case kDLComplex: s = "complex"; break;
    default: s = "DLPack type code " + std::to_string(t.code) + ", bits "; break;
  }
  s += std::to_string(t.bits);
  if (t.lanes != 1) s += " x " + std::to_string(t.lanes) + " lanes";
  return s;
}

Device device_of(const DLDevice& d) {
  Device out;
  out.id = d.device_id;
  switch (d.device_type) {
    // Pinned host memory is host memory to the host execution space.
    case kDLCPU: case kDLCUDAHost: case kDLROCMHost: out.kind = DeviceKind::cpu; break;
    // Managed memory is reachable from the device's execution space.
    case kDLCUDA: case kDLCUDAManaged: out.kind = DeviceKind::cuda; break;
    case kDLROCM: out.kind = DeviceKind::rocm; break;
    default: out.kind = DeviceKind::other; out.id = static_cast<int>(d.device_type); break;
  }
  if (out.kind == DeviceKind::cpu) out.id = 0;
  return out;
}

std::size_t element_bytes(DType t) {
  switch (t) {
    case DType::u8: return 1;
    case DType::bf16: case DType::u16: return 2;
    case DType::f32: case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::other: break;
  }
  return 1;
}

void check_layout(Tensor& t, const Arg& arg) {
  for (int d = 0; d < t.ndim; ++d)
    if (t.strides[d] < 0)
      fail(arg, "non-negative strides (uq does not walk arrays backwards)", "strides " + t.strides_text());
  if (t.dtype != DType::other && reinterpret_cast<std::uintptr_t>(t.data) % element_bytes(t.dtype) != 0)
    fail(arg, "data aligned to its element size (" + std::to_string(element_bytes(t.dtype)) + " bytes)",
         "a misaligned data pointer");
}

struct DlpackOwner {
  explicit DlpackOwner(DLManagedTensor* m) : managed(m) {}
  DlpackOwner(const DlpackOwner&) = delete;
  DlpackOwner& operator=(const DlpackOwner&) = delete;
  DLManagedTensor* managed;
  ~DlpackOwner() {
    if (managed->deleter != nullptr) managed->deleter(managed);
  }
};

Tensor from_dlpack(py::handle obj, const Arg& arg) {
  py::object capsule;
  try {
    capsule = obj.attr("__dlpack__")();
  } catch (py::error_already_set& e) {
    fail(arg, "an array whose __dlpack__() succeeds", std::string(py::str(py::type::handle_of(obj).attr("__name__"))) +
                                                          " whose __dlpack__() raised: " + e.what());
  }
  PyObject* c = capsule.ptr();
  if (!PyCapsule_IsValid(c, kCapsule))
    fail(arg, "__dlpack__() returning a \"dltensor\" capsule (DLPack 0.x)", "another object or a used capsule");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, kCapsule));
  // Taken: from now on this binding calls the deleter, the capsule's destructor does not.
  if (PyCapsule_SetName(c, kUsedCapsule) != 0) throw py::error_already_set();
  auto owner = std::make_shared<DlpackOwner>(managed);
  const DLTensor& dl = managed->dl_tensor;
  Tensor t;
  t.owner = owner;
  t.dtype = dtype_of(dl.dtype);
  t.dtype_text = dlpack_dtype_text(dl.dtype);
  t.device = device_of(dl.device);
  if (dl.ndim < 0 || dl.ndim > kMaxRank)
    fail(arg, "an array of rank <= " + std::to_string(kMaxRank), "rank " + std::to_string(dl.ndim));
  t.ndim = dl.ndim;
  t.data = static_cast<char*>(dl.data) + dl.byte_offset;
  std::int64_t compact = 1;  // strides == NULL: compact row-major
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = dl.shape[d];
    t.strides[d] = dl.strides != nullptr ? dl.strides[d] : compact;
    compact *= dl.shape[d];
  }
  check_layout(t, arg);
  return t;
}

DType dtype_of_format(const std::string& f, py::ssize_t itemsize) {
  // Buffer protocol (struct module) formats, possibly with a byte-order prefix.
  std::string s = f;
  if (!s.empty() && (s[0] == '<' || s[0] == '=' || s[0] == '@' || s[0] == '!' || s[0] == '>')) {
    if (s[0] == '>' || s[0] == '!') return DType::other;  // big-endian data
    s = s.substr(1);
  }
  if (s == "f" && itemsize == 4) return DType::f32;
  if (s == "B" && itemsize == 1) return DType::u8;
  if (s == "H" && itemsize == 2) return DType::u16;
  if ((s == "i" || s == "l" || s == "q") && itemsize == 4) return DType::i32;
  if ((s == "l" || s == "q") && itemsize == 8) return DType::i64;
  return DType::other;
}

struct BufferOwner {
  BufferOwner() = default;
  BufferOwner(const BufferOwner&) = delete;
  BufferOwner& operator=(const BufferOwner&) = delete;
  Py_buffer view{};
  ~BufferOwner() { PyBuffer_Release(&view); }
};

// A read-only NumPy array: NumPy's __dlpack__ refuses it, the buffer protocol does not.
Tensor from_buffer(py::handle obj, const Arg& arg) {
  auto owner = std::make_shared<BufferOwner>();
  if (PyObject_GetBuffer(obj.ptr(), &owner->view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    fail(arg, "an array NumPy can share through the buffer protocol", "a NumPy array it refused");
  }
  Py_buffer& b = owner->view;
  Tensor t;
  const std::string format = b.format != nullptr ? b.format : "B";
  t.dtype = dtype_of_format(format, b.itemsize);
  t.dtype_text = std::string(py::str(obj.attr("dtype")));
  t.device = Device{DeviceKind::cpu, 0};
  t.writable = !b.readonly;
  if (b.ndim > kMaxRank) fail(arg, "an array of rank <= " + std::to_string(kMaxRank), "rank " + std::to_string(b.ndim));
  t.ndim = b.ndim;
  t.data = b.buf;
  for (int d = 0; d < t.ndim; ++d) {
    t.shape[d] = b.shape[d];
    if (b.strides[d] % b.itemsize != 0)
      fail(arg, "strides that are whole elements", "a byte stride of " + std::to_string(b.strides[d]));
    t.strides[d] = b.strides[d] / b.itemsize;
  }
  t.owner = owner;
  check_layout(t, arg);
  return t;
}

bool is_readonly_numpy(py::handle obj) {
  // Only NumPy arrays take the buffer-protocol route, and only when read-only; everything else
  // (writable NumPy arrays included) goes through DLPack.
  PyObject* mod = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())), "__module__");
  if (mod == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool numpy = PyUnicode_Check(mod) && std::strcmp(PyUnicode_AsUTF8(mod), "numpy") == 0;
  Py_DECREF(mod);
  if (!numpy || !py::hasattr(obj, "flags")) return false;
  return !obj.attr("flags").attr("writeable").cast<bool>();
}

}  // namespace

std::string device_name(const Device& d) {
  switch (d.kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return "cuda:" + std::to_string(d.id);
    case DeviceKind::rocm: return "rocm:" + std::to_string(d.id);
    case DeviceKind::other: break;
  }
  return "DLPack device type " + std::to_string(d.id);
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bfloat16";
    case DType::f32: return "float32";
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::other: break;
  }
  return "another type";
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

std::string Tensor::shape_text() const {
  std::string s = "[";
  for (int d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

std::string Tensor::strides_text() const {
  std::string s = "(";
  for (int d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(strides[d]);
  return s + ")";
}

Tensor import_tensor(py::handle obj, const Arg& arg) {
  if (obj.is_none()) fail(arg, "an array", "None");
  if (is_readonly_numpy(obj)) return from_buffer(obj, arg);
  if (py::hasattr(obj, "__dlpack__")) return from_dlpack(obj, arg);
  fail(arg, "an array with __dlpack__ (torch, NumPy >= 1.22, CuPy, JAX) or a NumPy array",
       "an object of type " + std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
}

}  // namespace uqpy
