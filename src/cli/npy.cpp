#include "cli/npy.hpp"

#include "cli/failure.hpp"
#include "cli/output_file.hpp"
#include "cli/posix_io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// The reader and writer copy element bytes as they are: .npy data is little-endian,
// so the host must be too (x86-64, AArch64, ppc64le, RISC-V all are).
#if defined(__BYTE_ORDER__) && (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
#error "uq's .npy I/O assumes a little-endian host"
#endif

namespace uq {
namespace cli {
namespace npy {
namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMagicBytes = sizeof kMagic;

// A short, printable rendering of untrusted header text for error messages.
std::string printable(const std::string& s, std::size_t max_chars = 40) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max_chars) out += "...";
  return out;
}

DType make_dtype(char kind, int size, const char* descr) {
  DType d;
  d.kind = kind;
  d.size = size;
  d.descr = descr;
  return d;
}

// Parses the Python dict literal of a .npy header:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (4, 6, 256), }
// Only what NumPy writes is accepted: string keys and values in single or double
// quotes (no escapes), True/False, and a tuple of non-negative integers.
class HeaderDictParser {
 public:
  HeaderDictParser(std::string text, const std::string& file) : text_(std::move(text)), file_(file) {}

  void parse(std::string& descr, bool& fortran_order, std::vector<std::int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{', "'{' opening the header dict");
    for (;;) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      const std::string key = parse_string("a quoted key");
      skip_space();
      expect(':', "':' after a key");
      skip_space();
      if (key == "descr") {
        if (have_descr) fail("each key once", "a second 'descr'");
        if (peek() == '[') fail("a simple dtype such as '<f4'", "a structured dtype (a list of fields)");
        descr = parse_string("a quoted dtype string such as '<f4'");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_order) fail("each key once", "a second 'fortran_order'");
        fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        if (have_shape) fail("each key once", "a second 'shape'");
        shape = parse_shape();
        have_shape = true;
      } else {
        fail("only the keys 'descr', 'fortran_order' and 'shape'", "the key '" + printable(key) + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') continue;
      fail("',' or '}' after a value");
    }
    skip_space();
    if (pos_ != text_.size()) fail("only padding after the header dict");
    if (!have_descr || !have_order || !have_shape) {
      std::string missing;
      if (!have_descr) missing += " 'descr'";
      if (!have_order) missing += " 'fortran_order'";
      if (!have_shape) missing += " 'shape'";
      throw InputError(file_, "a header dict with the keys 'descr', 'fortran_order' and 'shape'",
                       "a dict without" + missing);
    }
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  [[noreturn]] void fail(const std::string& expected) {
    const std::string rest = pos_ < text_.size() ? text_.substr(pos_) : std::string();
    fail(expected, rest.empty() ? std::string("the end of the header")
                                : "'" + printable(rest, 24) + "' at header byte " + std::to_string(pos_));
  }

  [[noreturn]] void fail(const std::string& expected, const std::string& found) {
    throw InputError(file_, expected + " in the .npy header", found);
  }

  void expect(char c, const char* what) {
    if (peek() != c) fail(what);
    ++pos_;
  }

  std::string parse_string(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(what);
    const std::size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("a string without escapes");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("a closing quote");
    return text_.substr(start, pos_++ - start);
  }

  bool parse_bool() {
    if (text_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("True or False for 'fortran_order'");
  }

  std::int64_t parse_extent() {
    const std::size_t start = pos_;
    std::int64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (pos_ - start >= 18) fail("an extent below 10^18");
      v = v * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) fail("a non-negative integer extent");
    if (peek() == 'L') ++pos_;  // Python 2 long suffix, written by old NumPy versions
    return v;
  }

  std::vector<std::int64_t> parse_shape() {
    std::vector<std::int64_t> shape;
    expect('(', "'(' opening the shape tuple");
    skip_space();
    if (peek() == ')') {
      ++pos_;
      return shape;
    }
    for (;;) {
      if (shape.size() >= 32) fail("at most 32 dimensions");
      shape.push_back(parse_extent());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
        if (peek() == ')') {
          ++pos_;
          return shape;
        }
        continue;
      }
      if (peek() == ')') {
        if (shape.size() == 1) fail("a trailing ',' in a one-element tuple");
        ++pos_;
        return shape;
      }
      fail("',' or ')' in the shape tuple");
    }
  }

  std::string text_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

DType parse_descr(const std::string& descr, const std::string& file) {
  const std::string quoted = "dtype '" + printable(descr) + "'";
  if (descr.size() < 3) throw InputError(file, "a dtype such as '<f4'", quoted);
  const char order = descr[0];
  DType d;
  d.descr = descr;
  d.kind = descr[1];
  int size = 0;
  for (std::size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || size > 1000)
      throw InputError(file, "a numeric dtype (bool, int, uint, float or complex)", quoted);
    size = size * 10 + (descr[i] - '0');
  }
  d.size = size;
  const bool numeric = (d.kind == 'b' && size == 1) ||
                       ((d.kind == 'i' || d.kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
                       (d.kind == 'f' && (size == 2 || size == 4 || size == 8 || size == 16)) ||
                       (d.kind == 'c' && (size == 8 || size == 16 || size == 32));
  if (!numeric) throw InputError(file, "a numeric dtype (bool, int, uint, float or complex)", quoted);
  if (order == '>' && size > 1) throw InputError(file, "little-endian data ('<')", "big-endian " + quoted);
  if (order != '<' && order != '|' && order != '>')
    throw InputError(file, "an explicit byte order '<' or '|'", quoted);
  if (order == '|' && size > 1) throw InputError(file, "byte order '<' for a multi-byte dtype", quoted);
  return d;
}

std::uint32_t read_le(const unsigned char* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Reads exactly n bytes at `offset` of fd; a file that ends sooner is an IoError (it
// shrank since its size was taken).
void read_exact(int fd, std::uint64_t offset, void* out, std::size_t n, const std::string& path) {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw IoError(path, "cannot read: " + errno_text());
    if (r == 0) throw IoError(path, "cannot read: the file ended early (changed while being read?)");
    p += r;
    offset += static_cast<std::uint64_t>(r);
    n -= static_cast<std::size_t>(r);
  }
}

// The size of an open .npy file, which must be a regular file (its size is what every
// length in the header is checked against).
std::uint64_t regular_file_size(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw IoError(path, "cannot tell its size: " + errno_text());
  if (S_ISDIR(st.st_mode)) throw IoError(path, "cannot read: it is a directory");
  if (!S_ISREG(st.st_mode)) throw IoError(path, "cannot read: not a regular file (.npy files are read by offset)");
  return static_cast<std::uint64_t>(st.st_size);
}

// Reads and parses the header of an open .npy file of file_size bytes, and checks that
// the data that follows is exactly what the shape needs.
Header read_header(int fd, std::uint64_t file_size, const std::string& path) {
  // The header is at most the magic, version, a 4-byte length and that many bytes;
  // read what the length says, never more than the file holds.
  std::vector<unsigned char> head(static_cast<std::size_t>(std::min<std::uint64_t>(file_size, 12)));
  read_exact(fd, 0, head.data(), head.size(), path);
  if (head.size() >= 10 && std::memcmp(head.data(), kMagic, kMagicBytes) == 0 && head[6] >= 1 && head[6] <= 3) {
    const std::size_t prefix = head[6] == 1 ? 10 : 12;
    if (head.size() >= prefix) {
      const std::uint64_t header_len = read_le(head.data() + 8, head[6] == 1 ? 2 : 4);
      const std::uint64_t want = std::min(file_size, prefix + header_len);
      const std::size_t have = head.size();
      if (want > have) {
        head.resize(static_cast<std::size_t>(want));
        read_exact(fd, have, head.data() + have, head.size() - have, path);
      }
    }
  }
  const Header h = parse_header(head.data(), head.size(), path);
  const std::uint64_t available = file_size - h.data_offset;
  const std::string what = std::to_string(h.data_bytes) + " data bytes for shape " + shape_string(h.shape) +
                           " " + h.dtype.name();
  if (available < h.data_bytes)
    throw InputError(path, what, std::to_string(available) + " (truncated file)");
  if (available > h.data_bytes)
    throw InputError(path, what, std::to_string(available) + " (trailing bytes after the data)");
  return h;
}

// Output buffers of StreamWriter: large enough that writes are few, small next to any cache.
constexpr std::size_t kStreamBuffer = std::size_t(1) << 20;
// write() hands the data over in pieces of at most this (a write() call takes < 2 GiB).
constexpr std::size_t kWriteChunk = std::size_t(1) << 26;

}  // namespace

std::string DType::name() const {
  switch (kind) {
    case 'b': return "bool";
    case 'i': return "int" + std::to_string(8 * size);
    case 'u': return "uint" + std::to_string(8 * size);
    case 'f': return "float" + std::to_string(8 * size);
    case 'c': return "complex" + std::to_string(8 * size);
    default: return "dtype '" + printable(descr) + "'";
  }
}

DType float32() { return make_dtype('f', 4, "<f4"); }
DType uint8() { return make_dtype('u', 1, "|u1"); }
DType uint16() { return make_dtype('u', 2, "<u2"); }
DType int32() { return make_dtype('i', 4, "<i4"); }
DType int64() { return make_dtype('i', 8, "<i8"); }

std::int64_t Array::elements() const {
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;  // checked when the array was read or built
  return n;
}

std::int64_t element_count(const std::vector<std::int64_t>& shape, const std::string& file) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) {
    if (e < 0) throw InputError(file, "non-negative extents", "shape " + shape_string(shape));
    if (e != 0 && n > std::numeric_limits<std::int64_t>::max() / e)
      throw InputError(file, "a shape with fewer than 2^63 elements", "shape " + shape_string(shape));
    n *= e;
  }
  return n;
}

std::uint64_t data_bytes(const DType& dtype, const std::vector<std::int64_t>& shape, const std::string& file) {
  const std::int64_t n = element_count(shape, file);
  if (n > std::numeric_limits<std::int64_t>::max() / dtype.size)
    throw InputError(file, "a data size below 2^63 bytes", describe(dtype, shape));
  return static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(dtype.size);
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream s;
  s << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) s << ',';
  s << ')';
  return s.str();
}

Header parse_header(const unsigned char* bytes, std::size_t size, const std::string& file) {
  Header h;
  if (size < kMagicBytes || std::memcmp(bytes, kMagic, kMagicBytes) != 0)
    throw InputError(file, "a .npy file (starting with \\x93NUMPY)",
                     size < kMagicBytes ? "a file of " + std::to_string(size) + " bytes"
                                        : "'" + printable(std::string(reinterpret_cast<const char*>(bytes), 6)) + "'");
  if (size < kMagicBytes + 2)
    throw InputError(file, "a .npy format version after the magic", "the end of the file (truncated)");
  h.major = bytes[6];
  h.minor = bytes[7];
  if (h.major < 1 || h.major > 3 || h.minor != 0)
    throw InputError(file, ".npy format version 1.0, 2.0 or 3.0",
                     "version " + std::to_string(h.major) + "." + std::to_string(h.minor));
  const int len_bytes = h.major == 1 ? 2 : 4;
  const std::size_t prefix = kMagicBytes + 2 + static_cast<std::size_t>(len_bytes);
  if (size < prefix)
    throw InputError(file, "a header length after the version", "the end of the file (truncated)");
  const std::size_t header_len = read_le(bytes + kMagicBytes + 2, len_bytes);
  if (header_len > size - prefix)
    throw InputError(file, "a header of " + std::to_string(header_len) + " bytes",
                     "only " + std::to_string(size - prefix) + " bytes after the header length (truncated)");
  h.data_offset = prefix + header_len;

  std::string descr;
  HeaderDictParser(std::string(reinterpret_cast<const char*>(bytes + prefix), header_len), file)
      .parse(descr, h.fortran_order, h.shape);
  h.dtype = parse_descr(descr, file);
  if (h.fortran_order)
    throw InputError(file, "C order (fortran_order False; save np.ascontiguousarray(a))", "fortran_order True");
  const std::int64_t n = element_count(h.shape, file);
  if (n > std::numeric_limits<std::int64_t>::max() / h.dtype.size)
    throw InputError(file, "a data size below 2^63 bytes", "shape " + shape_string(h.shape));
  h.data_bytes = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(h.dtype.size);
  return h;
}

Array read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path, "cannot open: " + errno_text());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const std::uint64_t file_size = regular_file_size(fd, path);
  const Header h = read_header(fd, file_size, path);
  Array a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.data.resize(static_cast<std::size_t>(h.data_bytes));  // no more than the file holds
  read_exact(fd, h.data_offset, a.data.data(), a.data.size(), path);
  return a;
}

std::vector<unsigned char> encode_header(const DType& dtype, const std::vector<std::int64_t>& shape) {
  std::string dict = "{'descr': '" + dtype.descr + "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // Pad with spaces and end with '\n' so the data starts at a multiple of 64 bytes
  // (what NumPy does, so memory-mapping readers get aligned data).
  auto padded = [&](std::size_t prefix) {
    const std::size_t unpadded = prefix + dict.size() + 1;
    return dict + std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  };
  int major = 1;
  std::string text = padded(10);
  if (text.size() > 0xffff) {
    major = 2;
    text = padded(12);
  }
  std::vector<unsigned char> out(kMagic, kMagic + kMagicBytes);
  out.push_back(static_cast<unsigned char>(major));
  out.push_back(0);
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out.push_back(static_cast<unsigned char>((text.size() >> (8 * i)) & 0xff));
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

std::string describe(const DType& dtype, const std::vector<std::int64_t>& shape) {
  return "shape " + shape_string(shape) + " " + dtype.name();
}

StreamWriter::StreamWriter(const std::string& path, const DType& dtype, const std::vector<std::int64_t>& shape) {
  const std::vector<unsigned char> header = encode_header(dtype, shape);
  expected_ = data_bytes(dtype, shape, path);
  out_.reset(new OutputFile(path, header.size() + expected_, "an output of " + describe(dtype, shape)));
  buffer_.reserve(kStreamBuffer);
  buffer_.assign(header.begin(), header.end());
}

StreamWriter::~StreamWriter() = default;

void StreamWriter::flush() {
  out_->write(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void StreamWriter::append(const void* data, std::size_t bytes) {
  if (bytes > expected_ - appended_)
    throw std::logic_error("npy::StreamWriter: more data than the shape holds for " + out_->path());
  appended_ += bytes;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  if (buffer_.size() + bytes <= kStreamBuffer) {
    buffer_.insert(buffer_.end(), p, p + bytes);
    return;
  }
  flush();
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t chunk = std::min(bytes - done, kWriteChunk);
    out_->write(p + done, chunk);
    done += chunk;
  }
}

void StreamWriter::commit() {
  if (appended_ != expected_)
    throw std::logic_error("npy::StreamWriter: " + std::to_string(appended_) + " of " + std::to_string(expected_) +
                           " data bytes given for " + out_->path());
  flush();
  out_->commit();
}

void write(const std::string& path, const DType& dtype, const std::vector<std::int64_t>& shape,
           const void* data) {
  StreamWriter w(path, dtype, shape);
  const unsigned char* p = static_cast<const unsigned char*>(data);
  const std::uint64_t bytes = data_bytes(dtype, shape, path);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, kWriteChunk));
    w.append(p + done, chunk);
    done += chunk;
  }
  w.commit();
}

DataFile::DataFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) throw IoError(path, "cannot open for an in-place update: " + errno_text());
  try {
    header_ = read_header(fd_, regular_file_size(fd_, path), path);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

DataFile::~DataFile() {
  if (fd_ >= 0) ::close(fd_);
}

void DataFile::read(std::uint64_t offset, void* out, std::size_t n) const {
  if (offset > header_.data_bytes || n > header_.data_bytes - offset)
    throw std::logic_error("npy::DataFile::read beyond the data of " + path_);
  read_exact(fd_, header_.data_offset + offset, out, n, path_);
}

void DataFile::write(std::uint64_t offset, const void* in, std::size_t n) {
  if (offset > header_.data_bytes || n > header_.data_bytes - offset)
    throw std::logic_error("npy::DataFile::write beyond the data of " + path_);
  if (!pwrite_all(fd_, in, n, header_.data_offset + offset)) throw IoError(path_, "cannot write: " + errno_text());
}

void DataFile::close() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) throw IoError(path_, "cannot write: " + errno_text());
}

}  // namespace npy
}  // namespace cli
}  // namespace uq
