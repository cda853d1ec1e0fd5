#include "cli/posix_io.hpp"

#include <cerrno>
#include <cstring>

#include <unistd.h>

namespace uq {
namespace cli {

std::string errno_text() { return std::strerror(errno); }

bool pwrite_all(int fd, const void* data, std::size_t n, std::uint64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    offset += static_cast<std::uint64_t>(w);
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace cli
}  // namespace uq
