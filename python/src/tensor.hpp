// A Python array argument as uq's binding sees it: data pointer, dtype, shape, element strides,
// device and whether it may be written, taken from the object's DLPack export (__dlpack__) or,
// for a read-only NumPy array (which NumPy refuses to export through DLPack), from the buffer
// protocol. Nothing is copied: the Tensor keeps the producer's export alive until it is destroyed.
#pragma once

#include "error_args.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include <pybind11/pybind11.h>

namespace uqpy {

namespace py = pybind11;

// Element types the binding tells apart (DLPack type code and bits).
enum class DType { bf16, f32, u8, u16, i32, i64, other };

// Where the memory lives, in DLPack's terms reduced to what uq can run on.
enum class DeviceKind { cpu, cuda, rocm, other };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int id = 0;
  bool operator==(const Device& o) const { return kind == o.kind && id == o.id; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

std::string device_name(const Device& d);  // "cpu", "cuda:0", "rocm:1"
std::string dtype_name(DType t);           // "bfloat16", "float32", ...

inline constexpr int kMaxRank = 4;  // the highest rank a uq argument has (the KV cache)

struct Tensor {
  void* data = nullptr;  // the first element (DLPack's data + byte_offset)
  DType dtype = DType::other;
  std::string dtype_text;  // the producer's dtype as words, for messages
  int ndim = 0;
  std::array<std::int64_t, kMaxRank> shape{}, strides{};  // strides in elements
  Device device;
  bool writable = true;
  std::shared_ptr<void> owner;  // releases the producer's export (DLPack deleter or Py_buffer)

  std::int64_t numel() const;
  std::string shape_text() const;    // "[3, 48, 256]"
  std::string strides_text() const;  // "(12288, 256, 1)"
};

// Imports `obj` (an object with __dlpack__, or a NumPy array) for argument `arg` of `fn`.
// Throws uq::Error for anything else, for a rank above kMaxRank, negative strides, vector
// lanes or a pointer not aligned to the element size.
Tensor import_tensor(py::handle obj, const Arg& arg);

}  // namespace uqpy
