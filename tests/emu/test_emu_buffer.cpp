// Raw buffer loads and stores in the emulator: the range rule of spec §7.3 (per dword
// component, soffset not checked, "negative" voffsets out of range), every width.
#include "emu_test_support.hpp"

namespace emu_test {
namespace {

// 257 bytes of distinct data (an awkward size), aligned for dword access.
struct Data {
  alignas(16) std::uint8_t bytes[272];
  Data() {
    for (int i = 0; i < 272; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);
  }
  std::uint32_t dword(std::uint32_t at) const {
    std::uint32_t v;
    std::memcpy(&v, bytes + at, 4);
    return v;
  }
};

TEST(EmuBuffer, LoadsInRangeReadTheData) {
  const Data data;
  std::vector<u32x4> got(64);
  std::vector<std::uint32_t> b8(64), b16(64), b32(64);
  std::vector<u32x2> b64(64);
  run_one_wave([&] {
    const buffer_rsrc r = make_buffer_rsrc(data.bytes, 257);
    const std::uint32_t l = lane_id();
    got[l] = buffer_load_b128<cache::kNt>(r, 16 * (l % 16));
    b64[l] = buffer_load_b64(r, 8 * (l % 32));
    b32[l] = buffer_load_b32<cache::kSc0 | cache::kSc1>(r, 4 * l);
    b16[l] = buffer_load_b16(r, 2 * l + 1);
    b8[l] = buffer_load_b8(r, 3 * l);
  });
  for (std::uint32_t l = 0; l < 64; ++l) {
    for (std::uint32_t c = 0; c < 4; ++c) EXPECT_EQ(got[l][c], data.dword(16 * (l % 16) + 4 * c));
    EXPECT_EQ(b64[l][0], data.dword(8 * (l % 32)));
    EXPECT_EQ(b64[l][1], data.dword(8 * (l % 32) + 4));
    EXPECT_EQ(b32[l], data.dword(4 * l));
    EXPECT_EQ(b16[l], data.bytes[2 * l + 1] | data.bytes[2 * l + 2] << 8);
    EXPECT_EQ(b8[l], data.bytes[3 * l]);
  }
}

TEST(EmuBuffer, RangeIsCheckedPerDwordComponent) {
  // num_records 257: a 16-byte load at 248 has components at 248, 252 (in range), 256 (in
  // range: it starts at 256 < 257), 260 (out -> 0). The emulator reads only the bytes below
  // num_records of the straddling component (the rest of it reads 0).
  const Data data;
  u32x4 straddle{};
  u32x4 beyond{};
  std::uint32_t last_byte = 0, past_byte = 0, last_short = 0;
  run_one_wave([&] {
    const buffer_rsrc r = make_buffer_rsrc(data.bytes, 257);
    const u32x4 a = buffer_load_b128(r, 248);
    const u32x4 b = buffer_load_b128(r, 272);
    const std::uint32_t c = buffer_load_b8(r, 256);
    const std::uint32_t d = buffer_load_b8(r, 257);
    const std::uint32_t e = buffer_load_b16(r, 256);
    if (lane_id() == 0) {
      straddle = a;
      beyond = b;
      last_byte = c;
      past_byte = d;
      last_short = e;
    }
  });
  EXPECT_EQ(straddle[0], data.dword(248));
  EXPECT_EQ(straddle[1], data.dword(252));
  EXPECT_EQ(straddle[2], data.bytes[256]);
  EXPECT_EQ(straddle[3], 0u);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(beyond[c], 0u);
  EXPECT_EQ(last_byte, data.bytes[256]);
  EXPECT_EQ(past_byte, 0u);
  EXPECT_EQ(last_short, data.bytes[256]);
}

TEST(EmuBuffer, SoffsetIsNotRangeChecked) {
  // voffset 0 with soffset 64 reads byte 64 even with num_records 16; voffset 16 is out.
  const Data data;
  std::uint32_t in = 0, out = 1;
  run_one_wave([&] {
    const buffer_rsrc r = make_buffer_rsrc(data.bytes, 16);
    const std::uint32_t a = buffer_load_b32(r, 0, 64);
    const std::uint32_t b = buffer_load_b32(r, 16, 0);
    if (lane_id() == 0) {
      in = a;
      out = b;
    }
  });
  EXPECT_EQ(in, data.dword(64));
  EXPECT_EQ(out, 0u);
}

TEST(EmuBuffer, NegativeVoffsetIsOutOfRange) {
  // CK's trick: voffset 0x80000000 is a huge unsigned offset, so masked lanes read 0 even
  // with the largest range (nothing at base + 2 GiB is touched).
  const Data data;
  std::vector<std::uint32_t> got(64, kPoison);
  run_one_wave([&] {
    const buffer_rsrc r = make_buffer_rsrc(data.bytes, 0x7FFFFFFFu);
    const std::uint32_t l = lane_id();
    const std::uint32_t offset = l % 2 == 0 ? 4 * l : 0x80000000u;
    got[l] = buffer_load_b32(r, offset);
  });
  for (std::uint32_t l = 0; l < 64; ++l) EXPECT_EQ(got[l], l % 2 == 0 ? data.dword(4 * l) : 0u);
}

TEST(EmuBuffer, StoresOutOfRangeAreDropped) {
  alignas(16) std::uint8_t out[80];
  std::memset(out, 0xEE, sizeof out);
  run_one_wave([&] {
    const buffer_rsrc r = make_buffer_rsrc(out, 70);
    const std::uint32_t l = lane_id();
    if (l == 0) {
      // Components at 56, 60, 64 and 68 of a 16-byte store at 56: all start below 70.
      buffer_store_b128(u32x4{0x11111111u, 0x22222222u, 0x33333333u, 0x44444444u}, r, 56);
    }
    if (l == 1) buffer_store_b64(u32x2{0x55555555u, 0x66666666u}, r, 72);  // all out
    if (l == 2) buffer_store_b8(0x77, r, 69);                                // in
    if (l == 3) buffer_store_b16(0x8888, r, 70);                             // out
    if (l == 4) buffer_store_b32(0x99999999u, r, 0, 76);                     // soffset: in
  });
  std::uint32_t w[20];
  std::memcpy(w, out, sizeof w);
  EXPECT_EQ(w[14], 0x11111111u);
  EXPECT_EQ(w[15], 0x22222222u);
  EXPECT_EQ(w[16], 0x33333333u);
  // The dword at 68 starts in range: its bytes 68, 69 below num_records are written, 70 and
  // 71 are not (the emulator never writes past the range); lane 2 then rewrote byte 69
  // (lanes run in order), and lane 3's short at 70 was dropped.
  EXPECT_EQ(out[68], 0x44);
  EXPECT_EQ(out[69], 0x77);
  EXPECT_EQ(out[70], 0xEE);
  EXPECT_EQ(out[71], 0xEE);
  EXPECT_EQ(w[18], 0xEEEEEEEEu);  // lane 1's store at 72 dropped
  EXPECT_EQ(w[19], 0x99999999u);  // lane 4: voffset 0 in range, soffset 76 not checked
}

TEST(EmuBuffer, MisalignedDwordAccessFaults) {
  const Data data;
  int line = 0;
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    const buffer_rsrc r = make_buffer_rsrc(data.bytes, 256);
    line = __LINE__ + 1;
    (void)buffer_load_b32(r, lane_id() == 12 ? 6u : 8u);
  });
  EXPECT_NE(message.find("misaligned buffer access: lane 12"), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line)), std::string::npos) << message;
  // Bytes and shorts may sit anywhere.
  EXPECT_EQ(fault_of(uq::emu::LaunchConfig{}, [&] {
              const buffer_rsrc r = make_buffer_rsrc(data.bytes, 256);
              (void)buffer_load_b16(r, 2 * lane_id() + 1);
            }),
            "");
}

}  // namespace
}  // namespace emu_test
