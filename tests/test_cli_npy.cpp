// The uq program's .npy reader and writer (src/cli/npy.*): NumPy's own files read back
// exactly, the writer's bytes equal to NumPy's, every rejected kind of file rejected
// with a clear InputError, and no crash on truncated or corrupted files.
#include "cli/cli_test_support.hpp"
#include "cli/numpy_fixtures.hpp"

#include "cli/failure.hpp"
#include "cli/npy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace cli_test;
namespace npy = uq::cli::npy;

namespace {

npy::Array read_fixture(const TempDir& dir, const std::string& bytes, const std::string& name = "x.npy") {
  write_bytes(dir.file(name), bytes);
  return npy::read(dir.file(name));
}

template <class T>
std::vector<T> values(const npy::Array& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

// Reads `bytes` as a file and returns the InputError message ("" if it was accepted).
std::string rejection(const TempDir& dir, const std::string& bytes) {
  write_bytes(dir.file("bad.npy"), bytes);
  try {
    npy::read(dir.file("bad.npy"));
  } catch (const uq::cli::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CliNpy, ReadsNumpyFloat32InEveryFormatVersion) {
  TempDir dir;
  const std::vector<float> want = {-1.5f, -0.75f, 0.0f, 0.75f, 1.5f, 2.25f};
  for (const std::string* bytes : {&numpy_fixtures::f32_2x3_v1, &numpy_fixtures::f32_2x3_v2, &numpy_fixtures::f32_2x3_v3}) {
    const npy::Array a = read_fixture(dir, *bytes);
    EXPECT_TRUE(a.dtype.is('f', 4));
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(values<float>(a), want);
  }
}

TEST(CliNpy, ReadsNumpyIntegerAndByteArrays) {
  TempDir dir;
  const npy::Array u16 = read_fixture(dir, numpy_fixtures::u16_3);
  EXPECT_TRUE(u16.dtype.is('u', 2));
  EXPECT_EQ(values<std::uint16_t>(u16), (std::vector<std::uint16_t>{0x3F80, 0xC000, 0x7FC0}));
  const npy::Array i32 = read_fixture(dir, numpy_fixtures::i32_4);
  EXPECT_EQ(values<std::int32_t>(i32), (std::vector<std::int32_t>{0, -1, 2147483647, -2147483647 - 1}));
  const npy::Array i64 = read_fixture(dir, numpy_fixtures::i64_3);
  EXPECT_EQ(values<std::int64_t>(i64), (std::vector<std::int64_t>{5, -7, std::int64_t(1) << 40}));
  const npy::Array u8 = read_fixture(dir, numpy_fixtures::u8_2x1x1x3);
  EXPECT_TRUE(u8.dtype.is('u', 1));
  EXPECT_EQ(u8.shape, (std::vector<std::int64_t>{2, 1, 1, 3}));
  EXPECT_EQ(values<std::uint8_t>(u8), (std::vector<std::uint8_t>{0, 1, 2, 3, 4, 5}));
  const npy::Array b = read_fixture(dir, numpy_fixtures::bool_2);
  EXPECT_EQ(b.dtype.name(), "bool");
  const npy::Array f64 = read_fixture(dir, numpy_fixtures::f64_2x3);
  EXPECT_EQ(f64.dtype.name(), "float64");
  EXPECT_EQ(values<double>(f64)[5], 2.25);
}

TEST(CliNpy, ReadsEmptyAndZeroDimensionalArrays) {
  TempDir dir;
  const npy::Array empty = read_fixture(dir, numpy_fixtures::f32_empty_0x256);
  EXPECT_EQ(empty.shape, (std::vector<std::int64_t>{0, 256}));
  EXPECT_EQ(empty.elements(), 0);
  EXPECT_TRUE(empty.data.empty());
  const npy::Array scalar = read_fixture(dir, numpy_fixtures::f32_scalar);
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(values<float>(scalar), std::vector<float>{3.5f});
}

TEST(CliNpy, WriterBytesEqualNumpys) {
  TempDir dir;
  const std::vector<float> v = {-1.5f, -0.75f, 0.0f, 0.75f, 1.5f, 2.25f};
  npy::write(dir.file("f.npy"), npy::float32(), {2, 3}, v.data());
  EXPECT_EQ(read_bytes(dir.file("f.npy")), numpy_fixtures::f32_2x3_v1);
  const std::vector<std::uint16_t> u = {0x3F80, 0xC000, 0x7FC0};
  npy::write(dir.file("u.npy"), npy::uint16(), {3}, u.data());
  EXPECT_EQ(read_bytes(dir.file("u.npy")), numpy_fixtures::u16_3);
  const std::vector<std::int64_t> i = {5, -7, std::int64_t(1) << 40};
  npy::write(dir.file("i.npy"), npy::int64(), {3}, i.data());
  EXPECT_EQ(read_bytes(dir.file("i.npy")), numpy_fixtures::i64_3);
  const std::vector<std::uint8_t> b = {0, 1, 2, 3, 4, 5};
  npy::write(dir.file("b.npy"), npy::uint8(), {2, 1, 1, 3}, b.data());
  EXPECT_EQ(read_bytes(dir.file("b.npy")), numpy_fixtures::u8_2x1x1x3);
  npy::write(dir.file("e.npy"), npy::float32(), {0, 256}, nullptr);
  EXPECT_EQ(read_bytes(dir.file("e.npy")), numpy_fixtures::f32_empty_0x256);
  // Only the written file remains (the temporary was renamed).
  EXPECT_EQ(dir.list().size(), 5u);
}

TEST(CliNpy, WriterRoundTripsAwkwardShapes) {
  TempDir dir;
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{1}, {17, 255}, {3, 1, 257}, {2, 15, 1, 3}, {}}) {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    std::vector<std::int32_t> v(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) v[k] = static_cast<std::int32_t>(k * 2654435761u);
    npy::write(dir.file("r.npy"), npy::int32(), shape, v.data());
    const std::string bytes = read_bytes(dir.file("r.npy"));
    const npy::Header h = npy::parse_header(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "r.npy");
    EXPECT_EQ(h.data_offset % 64, 0u) << "data aligned as NumPy aligns it";
    const npy::Array a = npy::read(dir.file("r.npy"));
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(values<std::int32_t>(a), v);
  }
}

TEST(CliNpy, WriterSwitchesToFormat2OnlyWhenTheHeaderNeedsIt) {
  // Format 1.0 stores the header length in 2 bytes. Only a shape of thousands of
  // dimensions needs more; 22000 unit extents make a header of ~66 kB.
  const std::vector<unsigned char> small = npy::encode_header(npy::float32(), {2, 3});
  EXPECT_EQ(small[6], 1);
  EXPECT_EQ(small.size() % 64, 0u);
  EXPECT_EQ(small[8] | (small[9] << 8), static_cast<int>(small.size()) - 10);
  const std::vector<unsigned char> big = npy::encode_header(npy::float32(), std::vector<std::int64_t>(22000, 1));
  EXPECT_EQ(big[6], 2);
  EXPECT_EQ(big.size() % 64, 0u);
  const std::size_t len = big[8] | (big[9] << 8) | (big[10] << 16) | (static_cast<std::size_t>(big[11]) << 24);
  EXPECT_EQ(len, big.size() - 12);
  EXPECT_EQ(big.back(), '\n');
}

TEST(CliNpy, RejectsFilesThisProgramDoesNotAccept) {
  TempDir dir;
  struct Case {
    const std::string* bytes;
    const char* expected_words;
  };
  const Case cases[] = {
      {&numpy_fixtures::f32_big_endian, "big-endian dtype '>f4'"},
      {&numpy_fixtures::f32_fortran, "fortran_order True"},
      {&numpy_fixtures::structured, "a structured dtype"},
      {&numpy_fixtures::unicode, "dtype '<U2'"},
  };
  for (const Case& c : cases) {
    const std::string msg = rejection(dir, *c.bytes);
    EXPECT_NE(msg.find(c.expected_words), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(dir.file("bad.npy") + ": expected ", 0), 0u) << msg;
  }
  EXPECT_NE(rejection(dir, "not a numpy file at all").find("a .npy file"), std::string::npos);
  EXPECT_NE(rejection(dir, "").find("a file of 0 bytes"), std::string::npos);
  std::string v4 = numpy_fixtures::f32_2x3_v1;
  v4[6] = 4;
  EXPECT_NE(rejection(dir, v4).find("version 4.0"), std::string::npos);
  std::string trailing = numpy_fixtures::f32_2x3_v1 + "xx";
  EXPECT_NE(rejection(dir, trailing).find("trailing bytes"), std::string::npos);
  std::string short_data = numpy_fixtures::f32_2x3_v1.substr(0, numpy_fixtures::f32_2x3_v1.size() - 1);
  EXPECT_NE(rejection(dir, short_data).find("23 (truncated file)"), std::string::npos);
}

TEST(CliNpy, RejectsMalformedHeaderDicts) {
  TempDir dir;
  auto with_dict = [](const std::string& dict) {
    std::string text = dict + "\n";
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(text.size() & 0xff);
    bytes += static_cast<char>(text.size() >> 8);
    return bytes + text;
  };
  // Accepted forms first: spacing, key order, no trailing comma, double quotes.
  EXPECT_EQ(rejection(dir, with_dict("{\"shape\":(1,),'fortran_order':False,'descr':'|u1'}") + "a"), "");
  EXPECT_EQ(rejection(dir, with_dict("{'descr': '<i8', 'fortran_order': False, 'shape': (), }") +
                               std::string(8, '\0')),
            "");
  const std::pair<std::string, std::string> bad[] = {
      {"{'descr': '<f4', 'fortran_order': False}", "without 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", "the key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3)}", "a non-negative integer extent"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "trailing ','"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "below 10^18"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}", "2^63"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "a second 'descr'"},
      {"{'descr': '=f4', 'fortran_order': False, 'shape': (2,)}", "explicit byte order"},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", "byte order '<'"},
      {"{'descr': '<f3', 'fortran_order': False, 'shape': (2,)}", "a numeric dtype"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "only padding"},
      {"['descr']", "'{' opening"},
      {"{'descr: '<f4'}", "':' after a key"},
  };
  for (const auto& b : bad) {
    const std::string msg = rejection(dir, with_dict(b.first));
    EXPECT_NE(msg.find(b.second), std::string::npos) << b.first << " -> " << msg;
  }
}

// Every prefix of a valid file is rejected cleanly (never accepted, never a crash).
TEST(CliNpy, EveryTruncationIsRejected) {
  TempDir dir;
  for (const std::string* full : {&numpy_fixtures::f32_2x3_v1, &numpy_fixtures::f32_2x3_v2, &numpy_fixtures::i64_3}) {
    for (std::size_t n = 0; n < full->size(); ++n) {
      const std::string msg = rejection(dir, full->substr(0, n));
      EXPECT_FALSE(msg.empty()) << "a truncation to " << n << " bytes was accepted";
    }
  }
}

// Random corruption of header bytes (the length field included): the reader either
// accepts a file whose data size matches its header exactly or throws a one-line
// InputError. Most trials parse in memory; a few hundred go through files, where
// read() sizes its reads from the (corrupted) length field.
TEST(CliNpy, CorruptedHeadersNeverCrash) {
  TempDir dir;
  std::mt19937_64 rng(12345);
  const std::string& valid = numpy_fixtures::f32_2x3_v1;
  const std::size_t header_end = valid.size() - 24;
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    std::string bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const std::size_t pos = rng() % header_end;
      bytes[pos] = static_cast<char>(trial % 3 == 0 ? "(),:'{} 0123456789TF<|fiu"[rng() % 25] : rng() & 0xff);
    }
    const bool through_file = trial % 10 == 0;
    if (through_file) write_bytes(dir.file("fuzz.npy"), bytes);
    try {
      if (through_file) {
        const npy::Array a = npy::read(dir.file("fuzz.npy"));
        EXPECT_EQ(static_cast<std::int64_t>(a.data.size()), a.elements() * a.dtype.size);
      } else {
        const npy::Header h =
            npy::parse_header(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "fuzz.npy");
        EXPECT_LE(h.data_offset, bytes.size());
      }
      ++accepted;
    } catch (const uq::cli::InputError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "a message of one line";
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 2500);  // most corruptions are detected...
  EXPECT_GT(accepted, 0);     // ...and harmless ones (padding, equal-size digits) pass
}

TEST(CliNpy, UnreadableOrUnwritablePathsAreIoErrors) {
  TempDir dir;
  EXPECT_THROW(npy::read(dir.file("absent.npy")), uq::cli::IoError);
  EXPECT_THROW(npy::read(dir.file("")), uq::cli::IoError);  // a directory
  EXPECT_THROW(npy::write(dir.file("no/such/dir.npy"), npy::uint8(), {1}, "x"), uq::cli::IoError);
}
