// The speed of light of a decode launch, for the benchmarks: a kernel that only
// reads the bytes the decode must read -- each present token's 272-byte slot of every KV head,
// through the same block tables and lengths, plus the table entries it needs -- with 16-byte
// loads, several in flight per thread, and computes nothing. Plain C++ declaration; defined in
// sol.cu (uq_sm90). Needs 16-byte aligned slots (uq::Error otherwise). `sink` (device, 4
// bytes, may be nullptr) receives a value only in a case that never happens, so that the
// loads cannot be optimised away.
#pragma once

#include "uq/core/decode_launch.hpp"

namespace uq::sm90 {

void launch_decode_sol(const uq::impl::DecodePartitionsLaunch& args, unsigned* sink);

}  // namespace uq::sm90
