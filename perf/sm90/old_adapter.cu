// The previous sm90 decode launchers (commit 023c211, mma.sync kernels), compiled by
// build_harness.sh with -Duq=uqold from that commit's arch/sm90, behind two C entry points that
// take the (layout-identical) launch descriptions of uq/core/decode_launch.hpp.
#include "sm90/launch_decode.hpp"

extern "C" void uqold_launch_partitions(const void* launch) {
  uq::sm90::launch_decode_partitions(*static_cast<const uq::impl::DecodePartitionsLaunch*>(launch));
}
extern "C" void uqold_launch_reduce(const void* launch) {
  uq::sm90::launch_decode_reduce(*static_cast<const uq::impl::DecodeReduceLaunch*>(launch));
}
