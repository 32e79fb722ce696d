// NPY files (NumPy's .npy, formats 1.0, 2.0 and 3.0): little-endian, C order. Hand-written
// because no Debian package reads or writes NPY from C++; the header is a Python dict literal
// with three keys, small enough to parse directly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxi::tools {

/// Bad input (a file that is missing, malformed, or of the wrong dtype or shape): the programs
/// exit with status 2 and print what() as one line.
class input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One dimension a caller expects: `extent` < 0 accepts any extent; `name` is for messages.
struct dim {
  const char* name;
  int64_t extent = -1;
};

/// A whole array in host memory. `dtype` is NumPy's name ("uint8", "int32", "float32", ...).
struct npy_array {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  ///< the data, C order; operator new aligns it for any element

  int64_t elements() const;
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

/// Reads an NPY file; throws input_error naming the file on anything it cannot accept.
npy_array read_npy(const std::filesystem::path& file);

/// Reads an NPY file and checks its dtype and shape (rank and every fixed extent).
npy_array read_npy(const std::filesystem::path& file, const std::string& dtype,
                   const std::vector<dim>& shape);

/// NumPy's name of the element type T (uint8, int32, int64, float32).
template <class T>
const char* npy_dtype_name();

/// Writes `data` as an NPY 1.0 file (2.0 if the header needs it); throws std::runtime_error on
/// I/O failure.
template <class T>
void write_npy(const std::filesystem::path& file, const std::vector<int64_t>& shape, const T* data);

/// Formats a shape the way NumPy prints it: (3, 4), (5,), ().
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace mxi::tools
