// NumPy .npy files: reading (format versions 1.0, 2.0 and 3.0, C order, little-endian)
// and writing (version 1.0, or 2.0 when the header needs it). Every problem with a
// file's content is an InputError naming the file, what was expected and what was
// found; the reader never trusts a length or a shape before checking it against the
// file's size, so a truncated or corrupted file cannot crash it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace uq {
namespace cli {

class OutputFile;

namespace npy {

// A simple (non-structured) NumPy dtype.
struct DType {
  char kind = 0;   // 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool, 'c' complex
  int size = 0;    // bytes per element
  std::string descr;  // as written in the header, e.g. "<f4"

  bool is(char k, int s) const { return kind == k && size == s; }
  std::string name() const;  // "float32", "uint16", "int64", "bool", ...
};

DType float32();
DType uint8();
DType uint16();
DType int32();
DType int64();

// An array read from a file: its raw element bytes in C order, little-endian.
struct Array {
  DType dtype;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;

  std::int64_t elements() const;
  int rank() const { return static_cast<int>(shape.size()); }
};

// What the header of a .npy file says, and where the data starts.
struct Header {
  int major = 0;
  int minor = 0;
  DType dtype;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0;   // bytes before the first element
  std::uint64_t data_bytes = 0;  // elements x item size
};

// Parses the header at the start of bytes[0, size) of `file` (size may be the whole
// file or any prefix holding the header). Throws InputError for anything that is not
// a .npy header this program accepts (see read()).
Header parse_header(const unsigned char* bytes, std::size_t size, const std::string& file);

// Reads a whole .npy file. Throws IoError when it cannot be read (or is not a regular
// file) and InputError when it is not a C-order, little-endian .npy file of a simple
// numeric dtype whose data size matches its shape exactly.
Array read(const std::string& path);

// Writes a .npy file holding `data` (C order, little-endian element bytes), following
// the rules of output_file.hpp: a regular file is replaced atomically (a failed write
// never leaves a half-written file at `path`), a FIFO or character device written
// through. Throws IoError, or InputError when it cannot fit on its file system.
void write(const std::string& path, const DType& dtype, const std::vector<std::int64_t>& shape,
           const void* data);

// The same, for data produced in pieces: append() exactly the data bytes of `shape`,
// in order, then commit(). Memory stays bounded however large the output is; an output
// not committed is abandoned (output_file.hpp).
class StreamWriter {
 public:
  StreamWriter(const std::string& path, const DType& dtype, const std::vector<std::int64_t>& shape);
  ~StreamWriter();
  void append(const void* data, std::size_t bytes);
  void commit();

 private:
  void flush();
  std::unique_ptr<OutputFile> out_;
  std::uint64_t expected_ = 0, appended_ = 0;
  std::vector<unsigned char> buffer_;
};

// An existing .npy file opened for reading and writing parts of its data in place (an
// update whose cost grows with what it touches, not with the file). Throws IoError when
// it cannot be opened for reading and writing (read-only, not a regular file) and
// InputError when it is not a .npy file read() would accept.
class DataFile {
 public:
  explicit DataFile(const std::string& path);
  ~DataFile();
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  const Header& header() const { return header_; }
  // Byte ranges of the data (offsets from its first byte, within data_bytes).
  void read(std::uint64_t offset, void* out, std::size_t n) const;
  void write(std::uint64_t offset, const void* in, std::size_t n);
  // Closes the file, reporting a failed close (the last chance to see a write error).
  void close();

 private:
  std::string path_;
  Header header_;
  int fd_ = -1;
};

// "shape (4, 6, 256) float32", for messages.
std::string describe(const DType& dtype, const std::vector<std::int64_t>& shape);

// The header bytes (magic, version, length, dict, padding) write() puts before the data.
std::vector<unsigned char> encode_header(const DType& dtype, const std::vector<std::int64_t>& shape);

// "(4, 6, 256)", "(5,)" or "()", as NumPy prints a shape.
std::string shape_string(const std::vector<std::int64_t>& shape);

// Product of the extents; throws InputError(file, ...) when it does not fit in 63 bits.
std::int64_t element_count(const std::vector<std::int64_t>& shape, const std::string& file);

// The data bytes of an array of `shape`; throws InputError(file, ...) from 2^63 bytes on.
std::uint64_t data_bytes(const DType& dtype, const std::vector<std::int64_t>& shape, const std::string& file);

}  // namespace npy
}  // namespace cli
}  // namespace uq
