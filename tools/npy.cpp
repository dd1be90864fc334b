#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "schedule/te/error.h"

namespace tessel {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::string descr_of(DType d) { return d == DType::Float32 ? "<f4" : d == DType::Int64 ? "<i8" : "|b1"; }

// The value of `key` in the header dict ("'descr': '<f4'" gives "'<f4'").
std::string field(const std::string& header, const std::string& key, const std::string& path) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw InputError(path + ": the .npy header has no '" + key + "'");
  size_t start = header.find(':', at);
  if (start == std::string::npos) throw InputError(path + ": malformed .npy header");
  ++start;
  while (start < header.size() && header[start] == ' ') ++start;
  const char open = header[start];
  const size_t end = open == '('    ? header.find(')', start) + 1
                     : open == '\'' ? header.find('\'', start + 1) + 1
                                    : header.find_first_of(",}", start);
  if (end == std::string::npos || end <= start) throw InputError(path + ": malformed .npy header");
  return header.substr(start, end - start);
}

std::vector<int64_t> shape_of(const std::string& tuple, const std::string& path) {
  std::vector<int64_t> shape;
  std::string inner = tuple.substr(1, tuple.size() - 2);
  std::stringstream in(inner);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    if (item.empty() || item.size() > 12 || item.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(path + ": the .npy shape " + tuple + " is not a tuple of sizes");
    shape.push_back(std::stoll(item));
  }
  return shape;
}

}  // namespace

TensorData read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "': no such file or not readable");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) throw InputError(path + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    start = 10;
  } else if (major == 2 && bytes.size() >= 12) {
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    start = 12;
  } else {
    throw InputError(path + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (start + header_len > bytes.size()) throw InputError(path + ": truncated .npy header");
  const std::string header = bytes.substr(start, header_len);
  const std::string descr = field(header, "descr", path);
  if (field(header, "fortran_order", path) != "False") throw InputError(path + ": only C-ordered arrays are supported");
  DType dtype;
  if (descr == "'<f4'")
    dtype = DType::Float32;
  else if (descr == "'<i8'")
    dtype = DType::Int64;
  else if (descr == "'|b1'")
    dtype = DType::Bool;
  else
    throw InputError(path + ": dtype " + descr + " is not supported (float32, int64 or bool)");
  std::vector<int64_t> shape = shape_of(field(header, "shape", path), path);
  std::vector<uint8_t> data(bytes.begin() + static_cast<std::ptrdiff_t>(start + header_len), bytes.end());
  return TensorData(dtype, std::move(shape), std::move(data), path);  // checks the size against the shape
}

void write_npy(const std::string& path, const TensorData& data) {
  // Python's tuple syntax: (), (7,), (1, 3, 224, 224).
  std::string shape = "(";
  for (size_t i = 0; i < data.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(data.shape()[i]);
  shape += data.shape().size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr_of(data.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError("cannot write '" + path + "'");
  out.write(kMagic, 6);
  out.put('\x01');
  out.put('\x00');
  out.put(static_cast<char>(header.size() & 0xff));
  out.put(static_cast<char>(header.size() >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(data.bytes()), static_cast<std::streamsize>(data.byte_size()));
  if (!out) throw InputError("cannot write '" + path + "'");
}

}  // namespace tessel
