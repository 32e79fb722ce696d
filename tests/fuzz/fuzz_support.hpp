// What the fuzz targets share: a failed property aborts (libFuzzer saves the input as a crash),
// and inputs that the code under test reads from a path go through a per-process scratch file.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#define FUZZ_REQUIRE(cond)                                                              \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace mxi::fuzz {

/// A directory of this process's own under the temporary directory, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct owned {
    std::filesystem::path path;
    owned() {
      path = std::filesystem::temp_directory_path() /
             ("mxi-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~owned() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const owned dir;
  return dir.path;
}

/// Writes `size` bytes to scratch_dir()/name and returns the path.
inline std::filesystem::path write_scratch(const std::string& name, const void* data,
                                           size_t size) {
  const auto path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  FUZZ_REQUIRE(out.good());
  return path;
}

}  // namespace mxi::fuzz
