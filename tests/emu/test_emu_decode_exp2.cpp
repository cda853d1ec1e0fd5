// The decode tests' exp2 mode follows UQ_EMU_EXP2 (arch/emu/emulator.hpp): ctest runs this
// program a second time with UQ_EMU_EXP2=perturbed (test uq_emu_decode_exp2_perturbed), and
// this test makes that run fail if the perturbation were not in effect, so that passing it
// shows the decode tolerances cover an exp2 that is 1 ulp off everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "emu/emulator.hpp"
#include "gfx950/isa.hpp"

namespace {

TEST(EmuDecodeExp2, ModeFollowsTheEnvironment) {
  const char* v = std::getenv("UQ_EMU_EXP2");
  const bool perturbed = v != nullptr && std::strcmp(v, "perturbed") == 0;
  ASSERT_EQ(uq::emu::exp2_mode() == uq::emu::Exp2Mode::PerturbedUlp, perturbed);
  const float x = -3.3f, exact = static_cast<float>(std::exp2(-3.3));
  if (perturbed) {
    EXPECT_NE(uq::gfx950::fast_exp2(x), exact);
    std::printf("[ exp2     ] UQ_EMU_EXP2=perturbed: every emulated v_exp_f32 is 1 ulp off\n");
  } else {
    EXPECT_EQ(uq::gfx950::fast_exp2(x), exact);
  }
}

}  // namespace
