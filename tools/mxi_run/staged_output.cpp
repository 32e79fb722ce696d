#include "staged_output.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "npy.hpp"

namespace mxi::tools {
namespace fs = std::filesystem;
namespace {

// A fresh, empty directory beside `target` named after it, with the permissions mkdir(1) would
// give it (mkdtemp makes it 0700 whatever the umask).
fs::path make_temp_dir(const fs::path& target, const char* purpose) {
  std::string pattern =
      (target.parent_path() / ("." + target.filename().string() + "." + purpose + "-XXXXXX"))
          .string();
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error(pattern +
                             ": cannot create a temporary directory: " + std::strerror(errno));
  const mode_t mask = umask(0);  // reading the umask means setting it: put it straight back
  umask(mask);
  if (chmod(pattern.c_str(), 0777 & ~mask) != 0) {
    const int error = errno;
    rmdir(pattern.c_str());
    throw std::runtime_error(pattern + ": cannot set permissions: " + std::strerror(error));
  }
  return pattern;
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw std::runtime_error(to.string() + ": cannot move into place: " + ec.message());
}

}  // namespace

staged_output::staged_output(const fs::path& out_dir) {
  fs::path p = fs::absolute(out_dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "out/" names the directory "out"
  target_ = p;
  if (!fs::is_directory(target_.parent_path()))
    throw input_error("--out " + out_dir.string() + ": parent directory " +
                      target_.parent_path().string() + " does not exist");
  if (fs::exists(target_) && !fs::is_directory(target_))
    throw input_error("--out " + out_dir.string() + ": exists and is not a directory");
  staging_ = make_temp_dir(target_, "staging");
}

staged_output::~staged_output() {
  std::error_code ignored;  // best effort: a destructor must not throw
  if (!committed_) fs::remove_all(staging_, ignored);
}

void staged_output::commit() {
  if (!fs::exists(target_)) {
    rename_or_throw(staging_, target_);
    committed_ = true;
    return;
  }
  // rename(2) replaces only an empty directory: move the old OUT_DIR aside into an empty
  // temporary directory first, then the new one into place, and restore the old one on failure.
  const fs::path old = make_temp_dir(target_, "old");
  rename_or_throw(target_, old);
  std::error_code ec;
  fs::rename(staging_, target_, ec);
  if (ec) {
    std::error_code ignored;
    fs::rename(old, target_, ignored);
    throw std::runtime_error(target_.string() + ": cannot move into place: " + ec.message());
  }
  committed_ = true;
  fs::remove_all(old, ec);
}

}  // namespace mxi::tools
