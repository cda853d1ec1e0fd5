#include "cli/output_file.hpp"

#include "cli/failure.hpp"
#include "cli/posix_io.hpp"
#include "cli/temp_files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace uq {
namespace cli {
namespace {

std::string folder_of(const std::string& p) {
  const std::size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string name_of(const std::string& p) {
  const std::size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// What is at an output path, after following symbolic links.
struct Resolved {
  enum class Kind { New, Replace, Through } kind = Kind::New;
  std::string file;  // New/Replace: the file to create or replace; Through: the path to open
  struct stat st {};  // Replace: the file's status (mode, owner)
};

// The final target of a chain of symbolic links that ends in nothing (a dangling link),
// or `path` itself when nothing is there.
std::string missing_target(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat lst;
    if (::lstat(p.c_str(), &lst) != 0) {
      if (errno == ENOENT) return p;
      throw IoError(path, "cannot write: " + errno_text());
    }
    if (!S_ISLNK(lst.st_mode)) throw IoError(path, "cannot write: it changed while being opened");
    std::vector<char> buf(4096);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n < 0) throw IoError(path, "cannot read the symbolic link '" + p + "': " + errno_text());
    const std::string target(buf.data(), static_cast<std::size_t>(n));
    p = !target.empty() && target[0] == '/' ? target : folder_of(p) + "/" + target;
  }
  throw IoError(path, "cannot write: too many levels of symbolic links");
}

Resolved resolve(const std::string& path) {
  if (path.empty()) throw IoError(path, "cannot write: the path is empty");
  Resolved r;
  if (::stat(path.c_str(), &r.st) != 0) {
    if (errno != ENOENT) throw IoError(path, "cannot write: " + errno_text());
    r.kind = Resolved::Kind::New;
    r.file = missing_target(path);
    return r;
  }
  const mode_t m = r.st.st_mode;
  if (S_ISREG(m)) {
    // realpath also resolves /proc/self/fd links (e.g. /dev/stdout redirected to a file).
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) throw IoError(path, "cannot resolve its path: " + errno_text());
    r.file = real;
    std::free(real);
    r.kind = Resolved::Kind::Replace;
    return r;
  }
  if (S_ISFIFO(m) || S_ISCHR(m)) {
    r.kind = Resolved::Kind::Through;
    r.file = path;
    return r;
  }
  if (S_ISDIR(m)) throw IoError(path, "cannot write: it is a directory");
  throw IoError(path, std::string("cannot write: it is a ") + (S_ISBLK(m) ? "block device" : S_ISSOCK(m) ? "socket" : "special file") +
                          " (outputs are regular files, FIFOs or character devices)");
}

void check_space(const std::string& path, const std::string& folder, std::uint64_t bytes, const std::string& what) {
  struct statvfs vfs;
  if (::statvfs(folder.c_str(), &vfs) != 0) return;  // the temporary's creation reports a bad folder
  const unsigned long long avail = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
  if (bytes > avail)
    throw InputError(path, "an output that fits in the " + byte_size_text(avail) + " free on its file system",
                     byte_size_text(bytes) + " (" + std::to_string(bytes) + " bytes) for " + what);
}

mode_t current_umask() {
  const mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

}  // namespace

std::string byte_size_text(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

void require_space_for(const std::string& path, std::uint64_t bytes, const std::string& what) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return;  // written through: nothing is stored beside it
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) return;
    const std::string folder = folder_of(real);
    std::free(real);
    check_space(path, folder, bytes, what);
    return;
  }
  check_space(path, folder_of(path), bytes, what);
}

bool is_standard_output(const std::string& path) {
  struct stat a, b;
  return ::stat(path.c_str(), &a) == 0 && ::fstat(1, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void require_writable_output(const std::string& path) {
  const Resolved r = resolve(path);
  if (r.kind == Resolved::Kind::Through) return;  // opened (and, for a FIFO, waited on) when written
  if (r.kind == Resolved::Kind::Replace) {
    // The same probe as OutputFile's: no O_TRUNC, nothing changes.
    const int probe = ::open(r.file.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (probe < 0) throw IoError(path, "cannot write: " + errno_text());
    ::close(probe);
  }
  const std::string folder = folder_of(r.file);
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw IoError(path, "cannot create a temporary file in '" + folder +
                            "' (the output is written there, then renamed over its name): " + errno_text());
}

OutputFile::OutputFile(const std::string& path, std::uint64_t bytes, const std::string& what) : path_(path) {
  const Resolved r = resolve(path);
  target_ = r.file;
  if (r.kind == Resolved::Kind::Through) {
    // A FIFO blocks here until a reader opens it, as `cat > fifo` would.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) throw IoError(path, "cannot open for writing: " + errno_text());
    return;
  }
  if (r.kind == Resolved::Kind::Replace) {
    // Refuse what a plain open() would refuse (read-only file, read-only file system,
    // immutable file): replacing it through the folder would bypass the file's own
    // permission. The probe opens without O_TRUNC, so it changes nothing.
    const int probe = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (probe < 0) throw IoError(path, "cannot write: " + errno_text());
    ::close(probe);
  }
  const std::string folder = folder_of(target_);
  check_space(path, folder, bytes, what);
  std::string name = name_of(target_);
  if (name.size() > 200) name.resize(200);  // ".NAME.uq-XXXXXX" within NAME_MAX (255)
  registration_.reset(new TempRegistration(folder + "/." + name + ".uq-XXXXXX"));
  fd_ = ::mkostemp(registration_->name(), O_CLOEXEC);  // mode 0600 until set below
  if (fd_ < 0) {
    const std::string err = errno_text();
    registration_.reset();
    throw IoError(path, "cannot create a temporary file in '" + folder +
                            "' (the output is written there, then renamed over its name): " + err);
  }
  temp_ = registration_->name();
  // Nothing below throws: a failure leaves the temporary private (0600), never wider.
  if (r.kind == Resolved::Kind::Replace) {
    // Owner and group first (fchown by a non-root user clears set-id bits), then the mode.
    if (::fchown(fd_, r.st.st_uid, r.st.st_gid) != 0) (void)!::fchown(fd_, static_cast<uid_t>(-1), r.st.st_gid);
    (void)::fchmod(fd_, r.st.st_mode & 07777);
  } else {
    (void)::fchmod(fd_, 0666 & ~current_umask());
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());  // before the registration goes: a signal still finds it
  registration_.reset();
}

void OutputFile::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw IoError(path_, "cannot write" + (temp_.empty() ? std::string() : " '" + temp_ + "'") + ": " + errno_text());
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void OutputFile::extend_with_zeros(std::uint64_t size) {
  if (temp_.empty()) throw std::logic_error("OutputFile::extend_with_zeros on an output written through");
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
    throw IoError(path_, "cannot extend '" + temp_ + "' to " + std::to_string(size) + " bytes: " + errno_text());
}

void OutputFile::write_at(std::uint64_t offset, const void* data, std::size_t n) {
  if (temp_.empty()) throw std::logic_error("OutputFile::write_at on an output written through");
  if (!pwrite_all(fd_, data, n, offset)) throw IoError(path_, "cannot write '" + temp_ + "': " + errno_text());
}

void OutputFile::commit() {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)
    throw IoError(path_, "cannot write" + (temp_.empty() ? std::string() : " '" + temp_ + "'") + ": " + errno_text());
  if (temp_.empty()) return;
  if (::rename(temp_.c_str(), target_.c_str()) != 0)
    throw IoError(path_, "cannot rename '" + temp_ + "' to '" + target_ + "': " + errno_text());
  temp_.clear();
  registration_.reset();
}

}  // namespace cli
}  // namespace uq
