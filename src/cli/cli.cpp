#include "cli/cli.hpp"

#include "cli/commands.hpp"
#include "cli/failure.hpp"
#include "cli/output_file.hpp"

#include "uq/error.hpp"

#include <new>
#include <ostream>
#include <sstream>

#ifndef UQ_CLI_VERSION
#define UQ_CLI_VERSION "unknown"
#endif

namespace uq {
namespace cli {
namespace {

const Command* find_command(const std::string& name) {
  for (const Command& c : command_table())
    if (c.name == name) return &c;
  return nullptr;
}

std::string command_names() {
  std::string names;
  for (const Command& c : command_table()) names += (names.empty() ? "" : ", ") + c.name;
  return names;
}

bool is_help(const std::string& a) { return a == "-h" || a == "--help"; }

}  // namespace

std::string program_help() {
  std::ostringstream s;
  s << "uq " UQ_CLI_VERSION " - 4-bit KV-cache decode kernels on NumPy .npy files\n\n"
    << "usage: uq <command> [options]\n"
    << "       uq <command> --help      the command's options\n"
    << "       uq --version\n\n"
    << "commands:\n";
  for (const Command& c : command_table()) {
    std::string line = "  " + c.name;
    line.resize(14, ' ');
    s << line << c.summary << '\n';
  }
  s << '\n'
    << wrap("Arrays are NumPy .npy files (format versions 1.0, 2.0 and 3.0, C order, little-endian). "
            "UltraQuant tensors (write-kv, rotate-q, decode) are float32 (rounded to bf16, to nearest "
            "even) or uint16 (raw bf16 bits). Index keys (write-index) are float32 (used as given) or "
            "uint16 (bf16 bits); index queries (score) are uint8 E4M3 bits or float32 (rounded to "
            "E4M3); scores are float32. Index arrays are int32 or int64; caches are uint8.\n\n"
            "Kokkos reads its own options (--kokkos-...) before the command sees its arguments; the "
            "program runs on Kokkos' default execution space.\n\n"
            "Outputs (--out, and a new cache) are written to a temporary file .NAME.uq-XXXXXX in the "
            "output's own folder and renamed over NAME when complete, so a failed or interrupted command "
            "(SIGINT, SIGTERM, SIGHUP) leaves the old file, or none, and no temporary. A replaced file "
            "keeps its permissions; a symbolic link is followed and its target written; a FIFO or "
            "character device (/dev/null, /dev/stdout) is written through, and when the output is the "
            "program's standard output the summary line goes to stderr. Refused (exit 1): a file the user "
            "could not open for writing, a directory, a block device or socket, a folder where the "
            "temporary cannot be created; refused before anything is written (exit 2): an output larger than the "
            "free space of its file system. An existing cache (write-kv, write-index) is updated in place: "
            "only the slots written are read and rewritten, with SIGINT, SIGTERM and SIGHUP held back "
            "meanwhile.\n\n"
            "Exit status: 0 success; 1 an I/O or other failure; 2 invalid arguments or input (a "
            "malformed file, a wrong shape or dtype, or an error reported by the uq library).",
            0);
  return s.str();
}

std::string command_help(const Command& c) {
  std::ostringstream s;
  s << "uq " << c.name << " - " << c.summary << "\n\n"
    << "usage: uq " << c.usage << "\n\n"
    << wrap(c.description, 0) << '\n'
    << format_options(c.options);
  return s.str();
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool interactive) {
  if (args.empty()) {
    err << program_help();
    return kExitInvalid;
  }
  if (is_help(args[0]) || args[0] == "help") {
    if (args[0] == "help" && args.size() > 1) {
      if (const Command* c = find_command(args[1])) {
        out << command_help(*c);
        return kExitOk;
      }
    }
    out << program_help();
    return kExitOk;
  }
  if (args[0] == "--version") {
    out << "uq " UQ_CLI_VERSION "\n";
    return kExitOk;
  }
  const Command* cmd = find_command(args[0]);
  if (!cmd) {
    err << "uq: unknown command '" << args[0] << "' (commands: " << command_names() << "; see 'uq --help')\n";
    return kExitInvalid;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const std::string& a : rest) {
    if (is_help(a)) {
      out << command_help(*cmd);
      return kExitOk;
    }
  }
  const std::string prefix = "uq " + cmd->name + ": ";
  try {
    const ParsedOptions options = parse_options(cmd->options, rest);
    // Outputs the command could not write are refused before it reads or computes anything.
    for (const char* output : {"--out", "--lse"})
      if (options.has(output)) require_writable_output(options.text(output));
    // An output written to the program's own stdout (--out /dev/stdout) must not get the
    // summary line appended to it.
    const bool out_is_stdout = options.has("--out") && is_standard_output(options.text("--out"));
    CommandIo io{out_is_stdout ? err : out, err, interactive};
    cmd->run(options, io);
    return kExitOk;
  } catch (const UsageError& e) {
    out.flush();
    err << prefix << e.what() << " (see 'uq " << cmd->name << " --help')\n";
    return kExitInvalid;
  } catch (const InputError& e) {
    out.flush();
    err << prefix << e.what() << '\n';
    return kExitInvalid;
  } catch (const uq::Error& e) {
    out.flush();
    err << prefix << e.what() << '\n';
    return kExitInvalid;
  } catch (const IoError& e) {
    out.flush();
    err << prefix << e.what() << '\n';
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    out.flush();
    err << prefix << "out of memory\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    out.flush();
    err << prefix << e.what() << '\n';
    return kExitFailure;
  }
}

}  // namespace cli
}  // namespace uq
