// The float64 scalar reference of uq (namespace uqref): the ground truth every test
// compares with. Host-only plain C++17, written from the spec text alone (docs/spec/
// ultraquant.md and nvfp4-index.md); it includes nothing from src/ and shares no
// code with it. It favours obviousness over speed but is linear in the number of tokens.
//
//   uqref_formats.hpp     bf16, E2M1, UE8M0, E4M3 values and roundings
//   uqref_ultraquant.hpp  WHT, cache writer, dequantisation, query rounding, decode
//   uqref_nvfp4.hpp       NVFP4 index key writer, dequantisation, LUT, scorer, selection
//
// Each header lists the decisions it takes where the spec is silent.
#pragma once

#include "uqref_formats.hpp"
#include "uqref_nvfp4.hpp"
#include "uqref_ultraquant.hpp"
