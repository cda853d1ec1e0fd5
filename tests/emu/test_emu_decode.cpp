// Stamp of the shared decode cases (tests/decode_cases.hpp) for the emulated gfx950 path
// (emu_decode_path.hpp): each case runs on the gfx950 kernels in the wavefront emulator and on
// the generic path, the emulated result checked against the float64 reference and then against
// the generic one. The path's own tests: test_emu_decode_extras.cpp, test_emu_decode_reduce.cpp.
#include "emu_decode_path.hpp"

#define UQ_DECODE_PATH uqtest::EmuDecodePath
#define UQ_DECODE_PREFIX Emu
#include "decode_cases.hpp"
