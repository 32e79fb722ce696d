#include "npy.hpp"

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "NPY data is read and written in host order, which must be little-endian");

namespace mxi::tools {
namespace {

constexpr char magic[] = "\x93NUMPY";
constexpr size_t magic_size = 6;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw input_error(file.string() + ": " + what);
}

// NumPy's dtype name of a descr string such as '<f4' or '|u1'; "" when mxi has no use for it.
std::string dtype_of_descr(const std::filesystem::path& file, const std::string& descr) {
  if (descr.size() < 3) fail(file, "unsupported dtype descr '" + descr + "'");
  const char order = descr[0];
  const std::string kind_size = descr.substr(1);
  static const struct {
    const char* code;
    const char* name;
  } known[] = {{"u1", "uint8"},   {"i1", "int8"},    {"b1", "bool"},   {"u2", "uint16"},
               {"i2", "int16"},   {"f2", "float16"}, {"u4", "uint32"}, {"i4", "int32"},
               {"f4", "float32"}, {"u8", "uint64"},  {"i8", "int64"},  {"f8", "float64"}};
  for (const auto& k : known) {
    if (kind_size != k.code) continue;
    const bool one_byte = kind_size[1] == '1';
    if (order == '<' || order == '|' || (one_byte && order == '>')) return k.name;
    if (order == '>') fail(file, "big-endian data ('" + descr + "') is not supported");
  }
  fail(file, "unsupported dtype descr '" + descr + "'");
}

// Parses the header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class header_parser {
 public:
  header_parser(const std::filesystem::path& file, const std::string& text)
      : file_(file), s_(text) {}

  void parse(npy_array& out) {
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    expect('{');
    while (!eat('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        out.dtype = dtype_of_descr(file_, quoted());
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_order = true;
      } else if (key == "shape") {
        out.shape = tuple();
        have_shape = true;
      } else {
        bad("unknown key '" + key + "'");
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    if (!have_descr || !have_order || !have_shape)
      bad("needs the keys 'descr', 'fortran_order' and 'shape'");
    int wide = 0;  // Fortran order only differs from C order with two dims wider than 1
    for (int64_t e : out.shape) wide += e > 1;
    if (fortran && wide > 1) fail(file_, "Fortran-order arrays are not supported (use C order)");
  }

 private:
  [[noreturn]] void bad(const std::string& what) { fail(file_, "bad NPY header: " + what); }

  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) bad(std::string("expected '") + c + "'");
  }
  std::string quoted() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) bad("expected a string");
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string::npos) bad("unterminated string");
    std::string v = s_.substr(i_, end - i_);
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    skip_space();
    for (const char* word : {"True", "False"}) {
      if (s_.compare(i_, std::strlen(word), word) == 0) {
        i_ += std::strlen(word);
        return word[0] == 'T';
      }
    }
    bad("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> v;
    expect('(');
    while (!eat(')')) {
      skip_space();
      int64_t x = 0;
      const size_t start = i_;
      for (; i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])); ++i_) {
        if (x > (std::numeric_limits<int64_t>::max() - 9) / 10) bad("shape extent too large");
        x = 10 * x + (s_[i_] - '0');
      }
      if (i_ == start) bad("expected a shape extent");
      v.push_back(x);
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return v;
  }

  const std::filesystem::path& file_;
  const std::string& s_;
  size_t i_ = 0;
};

size_t element_size(const std::string& dtype) {
  if (dtype == "uint8" || dtype == "int8" || dtype == "bool") return 1;
  if (dtype == "uint16" || dtype == "int16" || dtype == "float16") return 2;
  if (dtype == "uint32" || dtype == "int32" || dtype == "float32") return 4;
  return 8;
}

uint32_t read_le(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

int64_t npy_array::elements() const {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

npy_array read_npy(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, std::filesystem::exists(file) ? "cannot be opened" : "missing file");
  unsigned char prefix[12];
  in.read(reinterpret_cast<char*>(prefix), 10);
  if (in.gcount() != 10 || std::memcmp(prefix, magic, magic_size) != 0)
    fail(file, "not an NPY file (bad magic)");
  const int major = prefix[6];
  if (major < 1 || major > 3)
    fail(file, "NPY format " + std::to_string(major) + " is not supported");
  uint32_t header_len = read_le(prefix + 8, 2);
  if (major >= 2) {  // 2.0 and 3.0 widen the length to 4 bytes; 3.0 allows UTF-8 (same parser)
    in.read(reinterpret_cast<char*>(prefix + 10), 2);
    if (in.gcount() != 2) fail(file, "truncated NPY header");
    header_len = read_le(prefix + 8, 4);
  }
  if (header_len > (1u << 24)) fail(file, "NPY header too long");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (static_cast<uint32_t>(in.gcount()) != header_len) fail(file, "truncated NPY header");

  npy_array a;
  header_parser(file, header).parse(a);

  // As NumPy: the nonzero extents times the element size must fit int64, even when another
  // extent is 0 (elements() and the callers multiply extents in int64, in any order).
  const size_t size = element_size(a.dtype);
  uint64_t n = 1;
  bool empty = false;
  for (int64_t e : a.shape) {
    if (e == 0) {
      empty = true;
    } else if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / size /
                       static_cast<uint64_t>(e)) {
      fail(file, "shape " + shape_string(a.shape) + " overflows");
    } else {
      n *= static_cast<uint64_t>(e);
    }
  }
  const uint64_t data_bytes = empty ? 0 : n * size;
  const auto data_start = static_cast<uint64_t>(in.tellg());
  const uint64_t file_bytes = std::filesystem::file_size(file);
  if (file_bytes - data_start != data_bytes) {
    fail(file, "holds " + std::to_string(file_bytes - data_start) + " data bytes, shape " +
                   shape_string(a.shape) + " of " + a.dtype + " needs " +
                   std::to_string(data_bytes));
  }
  a.bytes.resize(data_bytes);
  in.read(reinterpret_cast<char*>(a.bytes.data()), static_cast<std::streamsize>(data_bytes));
  if (static_cast<uint64_t>(in.gcount()) != data_bytes) fail(file, "read failed");
  return a;
}

npy_array read_npy(const std::filesystem::path& file, const std::string& dtype,
                   const std::vector<dim>& shape) {
  npy_array a = read_npy(file);
  if (a.dtype != dtype) fail(file, "dtype is " + a.dtype + ", expected " + dtype);
  bool match = a.shape.size() == shape.size();
  std::string want = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    want += (i ? ", " : "") + std::string(shape[i].name);
    if (shape[i].extent >= 0) want += "=" + std::to_string(shape[i].extent);
    match = match && (shape[i].extent < 0 || a.shape[i] == shape[i].extent);
  }
  want += shape.size() == 1 ? ",)" : ")";
  if (!match) fail(file, "shape is " + shape_string(a.shape) + ", expected " + want);
  return a;
}

template <class T>
const char* npy_dtype_name() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return "uint8";
  else if constexpr (std::is_same_v<T, int32_t>)
    return "int32";
  else if constexpr (std::is_same_v<T, int64_t>)
    return "int64";
  else
    return "float32";
}

template <class T>
void write_npy(const std::filesystem::path& file, const std::vector<int64_t>& shape,
               const T* data) {
  static_assert(std::is_same_v<T, uint8_t> || std::is_same_v<T, int32_t> ||
                    std::is_same_v<T, int64_t> || std::is_same_v<T, float>,
                "write_npy knows uint8, int32, int64 and float32");
  const char* descr = std::is_same_v<T, uint8_t>   ? "|u1"
                      : std::is_same_v<T, int32_t> ? "<i4"
                      : std::is_same_v<T, int64_t> ? "<i8"
                                                   : "<f4";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // NumPy pads the header with spaces and a newline so the data starts 64-byte aligned.
  const bool wide = header.size() + 11 + 64 > 65535;
  const size_t prefix = magic_size + 2 + (wide ? 4 : 2);
  header.append(63 - (prefix + header.size()) % 64, ' ');
  header += '\n';

  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(magic, magic_size);
  const char version[2] = {static_cast<char>(wide ? 2 : 1), 0};
  out.write(version, 2);
  const uint32_t len = static_cast<uint32_t>(header.size());
  const char len_bytes[4] = {static_cast<char>(len & 0xFF), static_cast<char>((len >> 8) & 0xFF),
                             static_cast<char>((len >> 16) & 0xFF), static_cast<char>(len >> 24)};
  out.write(len_bytes, wide ? 4 : 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
  out.close();
  if (!out) throw std::runtime_error(file.string() + ": write failed");
}

#define MXI_TOOLS_NPY_INSTANTIATE(T)        \
  template const char* npy_dtype_name<T>(); \
  template void write_npy<T>(const std::filesystem::path&, const std::vector<int64_t>&, const T*);
MXI_TOOLS_NPY_INSTANTIATE(uint8_t)
MXI_TOOLS_NPY_INSTANTIATE(int32_t)
MXI_TOOLS_NPY_INSTANTIATE(int64_t)
MXI_TOOLS_NPY_INSTANTIATE(float)
#undef MXI_TOOLS_NPY_INSTANTIATE

}  // namespace mxi::tools
