// The POSIX calls the CLI's file code repeats: errno as text for messages, and a
// positioned write that finishes what interrupted and short writes leave.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace uq {
namespace cli {

// strerror(errno).
std::string errno_text();

// Writes all n bytes of data at `offset` of fd, retrying interrupted and short writes.
// False, with errno set by the failing call, when a write fails or writes nothing.
bool pwrite_all(int fd, const void* data, std::size_t n, std::uint64_t offset);

}  // namespace cli
}  // namespace uq
