#include "cli/text_table.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace uq {
namespace cli {
namespace {

// Display width of UTF-8 text: count the bytes that start a character.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80 ? 1 : 0;
  return n;
}

}  // namespace

std::string TextTable::render() const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      out += cell;
      if (i + 1 < width.size()) out += std::string(width[i] - display_width(cell) + 2, ' ');
    }
    return out + "\n";
  };
  std::string out = line(header_);
  std::size_t total = 0;
  for (std::size_t i = 0; i < width.size(); ++i) total += width[i] + (i + 1 < width.size() ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

}  // namespace cli
}  // namespace uq
