// Writing an output file the way a careful user of a Unix tool expects (the README's
// command table and `uq --help` state these rules; this is the one place they live):
//
//  - A path that does not exist yet, or a regular file, is written to a temporary file
//    ".NAME.uq-XXXXXX" in the same folder and renamed over NAME when complete, so a
//    failed or interrupted command leaves the old file (or none) and no temporary
//    (temp_files.hpp). An existing file keeps its permission bits, and its owner and
//    group where the user may set them; other hard links to it keep the old content
//    (as with sed -i). A new file gets 0666 less the umask, as with a plain open().
//  - A symbolic link is followed: its target is written (replaced as above, or created
//    when the link dangles) and the link stays a link.
//  - A FIFO or a character device (/dev/null, /dev/stdout on a pipe or terminal) is
//    written through: opened and written in order, nothing renamed.
//  - Refused with IoError (exit 1): a directory, a block device, a socket; a file the
//    user could not open for writing (read-only, on a read-only file system); a folder
//    where the temporary cannot be created.
//  - Refused with InputError (exit 2) before anything is written: an output larger
//    than the free space of its file system.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace uq {
namespace cli {

class TempRegistration;

class OutputFile {
 public:
  // Opens `path` for an output of `bytes` bytes (what `what` describes, for the message
  // when it does not fit).
  OutputFile(const std::string& path, std::uint64_t bytes, const std::string& what);
  ~OutputFile();  // an output not committed is abandoned: its temporary removed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Appends n bytes (sequential writes, any kind of output).
  void write(const void* data, std::size_t n);
  // Whether the output is a temporary file (write_at and extend_with_zeros work).
  bool random_access() const { return !temp_.empty(); }
  // Random access only: the file grows to `size` bytes of zeros (a sparse file where the
  // file system has them: no zero is written), and write_at patches bytes anywhere.
  void extend_with_zeros(std::uint64_t size);
  void write_at(std::uint64_t offset, const void* data, std::size_t n);
  // Completes the output: closes it and renames the temporary over the path.
  void commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_;    // as the user gave it (for messages)
  std::string target_;  // the file that is replaced or written through
  std::string temp_;    // the temporary's name; empty when written through
  std::unique_ptr<TempRegistration> registration_;
  int fd_ = -1;
};

// Refuses, before any work is done, an output the command could not write: what OutputFile
// would refuse (IoError) — a directory, a block device or socket, a file the user could not
// open for writing, a folder where its temporary cannot be created. Writes nothing.
void require_writable_output(const std::string& path);

// Throws InputError(path, ...) when `bytes` exceed the free space of the file system
// that would hold a new or replaced `path` (no check where that cannot be told).
void require_space_for(const std::string& path, std::uint64_t bytes, const std::string& what);

// Whether `path` names the file the program's standard output is (then the commands'
// summary lines go to stderr, not into the output).
bool is_standard_output(const std::string& path);

// "9.0 PiB", "512.0 MiB", "17 bytes".
std::string byte_size_text(std::uint64_t bytes);

}  // namespace cli
}  // namespace uq
