// What a uq entry point takes for each array argument, checked on the imported Tensor before
// anything runs: rank, element type, device, writability, and for outputs a layout in which no
// two elements share memory. Each failure is a uq::Error naming the Python function, the
// argument, what was expected and what was given. Also the two host-only conversions the
// binding makes for NumPy, which has neither bf16 nor E4M3: float32 rounded to bf16 or to
// E4M3 bits, into a new buffer (the only copies the binding ever makes).
#pragma once

#include "error_args.hpp"
#include "tensor.hpp"

#include <initializer_list>
#include <string>

namespace uqpy {

void require_rank(const Tensor& t, const Arg& a, int rank, const char* shape_words);
void require_dtype(const Tensor& t, const Arg& a, std::initializer_list<DType> allowed, const char* words);
// Outputs: writable, and no two elements at the same address (no zero or overlapping strides).
void require_output(const Tensor& t, const Arg& a);
// Every array of one call lives on one device: its first array argument's, or its plan's
// (`whose`: "'q'", "the plan").
void require_device(const Tensor& t, const Arg& a, const Device& call_device, const std::string& whose);

// A bf16 input of the given rank: bfloat16, or uint16 holding bf16 bits, as it is; float32 in
// host memory rounded to bf16 (round to nearest even, as the uq program rounds .npy inputs).
Tensor bf16_input(py::handle obj, const Arg& a, int rank, const char* shape_words);
// A bf16 output of the given rank: bfloat16 or uint16 (bf16 bits), written in place.
Tensor bf16_output(py::handle obj, const Arg& a, int rank, const char* shape_words);
// An E4M3 input (the scorer's q): uint8 bits as they are; float32 in host memory rounded to E4M3.
Tensor e4m3_input(py::handle obj, const Arg& a, int rank, const char* shape_words);
// Any other array: imported and checked for rank and type (outputs also with require_output).
Tensor typed_input(py::handle obj, const Arg& a, int rank, const char* shape_words, std::initializer_list<DType> allowed,
                   const char* dtype_words);
Tensor typed_output(py::handle obj, const Arg& a, int rank, const char* shape_words,
                    std::initializer_list<DType> allowed, const char* dtype_words);

}  // namespace uqpy
