// libFuzzer target: the uq program's .npy reader and input conversions on arbitrary
// bytes (fuzz/README.md: how to build and run it). Each input is put in an in-memory
// file and read the way the commands read their inputs (npy::read, then the dtype
// conversions and the shape checks), and opened the way an in-place update opens a
// cache (npy::DataFile). Malformed input must end in InputError or IoError; anything
// else (a crash, a sanitizer report, an exception of another type, a broken property
// below) is a finding.
#include "cli/failure.hpp"
#include "cli/inputs.hpp"
#include "cli/npy.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace {

namespace cli = uq::cli;
namespace npy = uq::cli::npy;

void require(bool ok) {
  if (!ok) __builtin_trap();  // a broken property: libFuzzer saves the input
}

// The in-memory file the input is written to, reached by a path like any input.
struct MemoryFile {
  int fd = ::memfd_create("uq_fuzz.npy", 0);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void fill(const std::uint8_t* data, std::size_t size) const {
    require(fd >= 0 && ::ftruncate(fd, 0) == 0);
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
      require(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }
};

template <class F>
void expect_clean_rejection_or_success(F&& f) {
  try {
    f();
  } catch (const cli::InputError&) {
  } catch (const cli::IoError&) {
  }
}

// What the commands do with an array they have read.
void convert(const npy::Array& a, const std::string& file) {
  require(a.data.size() == static_cast<std::size_t>(a.elements()) * static_cast<std::size_t>(a.dtype.size));
  expect_clean_rejection_or_success([&] { require(cli::to_bf16(a, file).size() == a.data.size() / a.dtype.size); });
  expect_clean_rejection_or_success([&] { cli::to_int32(a, file); });
  expect_clean_rejection_or_success([&] { require(cli::to_int64(a, file).size() == a.data.size() / a.dtype.size); });
  expect_clean_rejection_or_success([&] { cli::to_float32(a, file); });
  expect_clean_rejection_or_success([&] { require(cli::to_e4m3(a, file).size() == a.data.size() / a.dtype.size); });
  // Shape patterns of the commands; a bound name must agree with a second array.
  for (const cli::ShapePattern& p :
       {cli::ShapePattern{"T", "Hk", "256"}, cli::ShapePattern{"num_blocks", "block_size", "Hk", "slot_bytes"},
        cli::ShapePattern{"num_blocks", "9216"}, cli::ShapePattern{"R"}, cli::ShapePattern{"B", "max_blocks"}}) {
    expect_clean_rejection_or_success([&] {
      cli::ShapeBindings shapes;
      shapes.match(a, file, p);
      if (p.dims().size() == 4) cli::check_cache_geometry(file, a.shape);
      shapes.match(a, file, p);  // the same shape again: must agree with itself
    });
  }
  // The header the writer would give this array reads back as the same array.
  const std::vector<unsigned char> header = npy::encode_header(a.dtype, a.shape);
  const npy::Header h = npy::parse_header(header.data(), header.size(), "encoded");
  require(h.shape == a.shape && h.dtype.kind == a.dtype.kind && h.dtype.size == a.dtype.size &&
          h.data_offset == header.size() && h.data_offset % 64 == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const MemoryFile file;
  file.fill(data, size);
  expect_clean_rejection_or_success([&] { convert(npy::read(file.path), file.path); });
  // The header parser on the bytes themselves, as a prefix of a file.
  expect_clean_rejection_or_success([&] { npy::parse_header(data, size, "bytes"); });
  // An in-place update's open: header checks only, then reads within the data.
  expect_clean_rejection_or_success([&] {
    npy::DataFile f(file.path);
    const std::uint64_t n = f.header().data_bytes;
    require(f.header().data_offset + n == size);
    std::vector<unsigned char> first(static_cast<std::size_t>(n < 64 ? n : 64));
    f.read(0, first.data(), first.size());
    if (n > 0) {
      unsigned char last = 0;
      f.read(n - 1, &last, 1);
      require(last == data[size - 1]);
    }
    f.close();
  });
  return 0;
}
