// An output directory that appears whole or not at all: files are written into a temporary
// directory beside OUT_DIR (same file system, so the final rename is atomic) and moved into place
// by commit(); without commit() the temporary directory is removed.
#pragma once

#include <filesystem>

namespace mxi::tools {

class staged_output {
 public:
  /// Throws input_error when OUT_DIR's parent is missing or OUT_DIR exists and is no directory.
  explicit staged_output(const std::filesystem::path& out_dir);
  ~staged_output();
  staged_output(const staged_output&) = delete;
  staged_output& operator=(const staged_output&) = delete;

  /// Where to write the outputs until commit().
  const std::filesystem::path& dir() const { return staging_; }

  /// Moves the staged directory to OUT_DIR, replacing a previous OUT_DIR.
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path staging_;
  bool committed_ = false;
};

}  // namespace mxi::tools
