// A plain-text table with aligned columns (the demo's result table).
#pragma once

#include <string>
#include <vector>

namespace uq {
namespace cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Header, a rule, then the rows; columns separated by two spaces.
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace cli
}  // namespace uq
