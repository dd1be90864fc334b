#include "frontend/onnx_tensor.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <climits>
#include <cstring>
#include <fstream>

#include "onnx/onnx_pb.h"
#include "schedule/te/error.h"

// raw_data is little-endian by the ONNX spec; tessel copies it as it is.
static_assert(std::endian::native == std::endian::little, "tessel reads ONNX raw_data in place");

namespace tessel {

using onnx::TensorProto;

int64_t checked_element_count(const std::vector<int64_t>& dims, const std::string& what) {
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] < 0)
      throw InputError(what + ": dimension " + std::to_string(k) + " of " + shape_string(dims) + " is negative");
  // A zero makes the count 0, but the other extents still enter strides and loop bounds, so their
  // product must fit too.
  int64_t product = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(product, std::max<int64_t>(d, 1), &product))
      throw InputError(what + ": the shape " + shape_string(dims) + " has more than 2^63 elements");
  for (int64_t d : dims)
    if (d == 0) return 0;
  return product;
}

int64_t checked_byte_count(int64_t elements, int64_t element_bytes, const std::string& what) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, element_bytes, &bytes))
    throw InputError(what + ": " + std::to_string(elements) + " elements of " + std::to_string(element_bytes) +
                     " bytes pass 2^63 bytes");
  return bytes;
}

std::string onnx_type_name(int32_t onnx_type) {
  if (!TensorProto::DataType_IsValid(onnx_type)) return "type " + std::to_string(onnx_type);
  return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(onnx_type));
}

std::optional<DType> dtype_from_onnx(int32_t onnx_type) {
  switch (onnx_type) {
    case TensorProto::FLOAT:
      return DType::Float32;
    case TensorProto::INT64:
      return DType::Int64;
    case TensorProto::BOOL:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

int64_t onnx_element_bytes(int32_t onnx_type) {
  switch (onnx_type) {
    case TensorProto::UINT8:
    case TensorProto::INT8:
    case TensorProto::BOOL:
      return 1;
    case TensorProto::UINT16:
    case TensorProto::INT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::INT64:
    case TensorProto::UINT64:
    case TensorProto::DOUBLE:
    case TensorProto::COMPLEX64:
      return 8;
    case TensorProto::COMPLEX128:
      return 16;
    default:
      return 0;  // STRING, UNDEFINED
  }
}

namespace {

bool is_widened_integer(int32_t onnx_type) {
  switch (onnx_type) {
    case TensorProto::UINT8:
    case TensorProto::INT8:
    case TensorProto::UINT16:
    case TensorProto::INT16:
    case TensorProto::INT32:
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      return true;
    default:
      return false;
  }
}

bool is_external(const TensorProto& proto) {
  return proto.has_data_location() && proto.data_location() == TensorProto::EXTERNAL;
}

// The typed field a type's values live in when not in raw_data, as (element count, field name).
std::pair<int64_t, const char*> typed_field(const TensorProto& p) {
  switch (p.data_type()) {
    case TensorProto::FLOAT:
      return {p.float_data_size(), "float_data"};
    case TensorProto::COMPLEX64:
      return {p.float_data_size() / 2, "float_data"};
    case TensorProto::DOUBLE:
      return {p.double_data_size(), "double_data"};
    case TensorProto::COMPLEX128:
      return {p.double_data_size() / 2, "double_data"};
    case TensorProto::INT64:
      return {p.int64_data_size(), "int64_data"};
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      return {p.uint64_data_size(), "uint64_data"};
    case TensorProto::STRING:
      return {p.string_data_size(), "string_data"};
    default:
      return {p.int32_data_size(), "int32_data"};  // the narrow types, BOOL and FLOAT16
  }
}

template <typename T>
T load(const std::string& raw, int64_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

// Element i of an integer or boolean proto, from raw_data or its typed field.
int64_t integer_at(const TensorProto& p, int64_t i, const std::string& what) {
  if (!p.has_raw_data()) {
    if (p.data_type() == TensorProto::INT64) return p.int64_data(i);
    if (p.data_type() != TensorProto::UINT32 && p.data_type() != TensorProto::UINT64) return p.int32_data(i);
    const uint64_t u = p.uint64_data(i);
    if (u > static_cast<uint64_t>(INT64_MAX))
      throw InputError(what + ": UINT64 value " + std::to_string(u) + " passes INT64's range");
    return static_cast<int64_t>(u);
  }
  const std::string& raw = p.raw_data();
  switch (p.data_type()) {
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return load<uint8_t>(raw, i);
    case TensorProto::INT8:
      return load<int8_t>(raw, i);
    case TensorProto::UINT16:
      return load<uint16_t>(raw, i);
    case TensorProto::INT16:
      return load<int16_t>(raw, i);
    case TensorProto::INT32:
      return load<int32_t>(raw, i);
    case TensorProto::UINT32:
      return load<uint32_t>(raw, i);
    case TensorProto::INT64:
      return load<int64_t>(raw, i);
    default: {
      const uint64_t u = load<uint64_t>(raw, i);
      if (u > static_cast<uint64_t>(INT64_MAX))
        throw InputError(what + ": UINT64 value " + std::to_string(u) + " passes INT64's range");
      return static_cast<int64_t>(u);
    }
  }
}

std::vector<uint8_t> float_bytes(const TensorProto& p, int64_t n) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * sizeof(float));
  const void* src = p.has_raw_data() ? static_cast<const void*>(p.raw_data().data()) : p.float_data().data();
  if (n > 0) std::memcpy(bytes.data(), src, bytes.size());
  return bytes;
}

std::vector<uint8_t> integer_bytes(const TensorProto& p, int64_t n, DType dtype, const std::string& what) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n * dtype_bytes(dtype)));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = integer_at(p, i, what);
    if (dtype == DType::Bool)
      bytes[i] = v != 0 ? 1 : 0;
    else
      std::memcpy(bytes.data() + i * sizeof(int64_t), &v, sizeof v);
  }
  return bytes;
}

}  // namespace

void check_tensor_sizes(const TensorProto& proto, const std::string& what) {
  const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  const int64_t n = checked_element_count(dims, what);
  if (is_external(proto)) return;
  const std::string type = onnx_type_name(proto.data_type());
  if (proto.has_raw_data()) {
    const int64_t element_bytes = onnx_element_bytes(proto.data_type());
    if (element_bytes == 0) throw InputError(what + ": element type " + type + " cannot be stored in raw_data");
    const int64_t expected = checked_byte_count(n, element_bytes, what);
    if (static_cast<int64_t>(proto.raw_data().size()) != expected)
      throw InputError(what + ": raw_data holds " + std::to_string(proto.raw_data().size()) + " bytes, but " +
                       shape_string(dims) + " elements of " + type + " need " + std::to_string(expected));
    return;
  }
  const auto [stored, field] = typed_field(proto);
  if (stored != n)
    throw InputError(what + ": " + field + " holds " + std::to_string(stored) + " elements, but its shape " +
                     shape_string(dims) + " of " + type + " needs " + std::to_string(n));
}

TensorData tensor_from_proto(const TensorProto& proto, const std::string& what, Widening widening) {
  check_tensor_sizes(proto, what);
  if (is_external(proto)) throw InputError(what + ": its data is stored in an external file that was not loaded");
  std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype && widening == Widening::Integers && is_widened_integer(proto.data_type())) dtype = DType::Int64;
  if (!dtype)
    throw InputError(what + ": element type " + onnx_type_name(proto.data_type()) +
                     " is not supported (tessel computes with FLOAT, INT64 and BOOL)");
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  const int64_t n = checked_element_count(dims, what);
  std::vector<uint8_t> bytes = *dtype == DType::Float32 ? float_bytes(proto, n) : integer_bytes(proto, n, *dtype, what);
  return TensorData(*dtype, std::move(dims), std::move(bytes), what);
}

void tensor_to_proto(const TensorData& data, const std::string& name, TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(data.dtype() == DType::Float32 ? TensorProto::FLOAT
                       : data.dtype() == DType::Int64 ? TensorProto::INT64
                                                      : TensorProto::BOOL);
  for (int64_t d : data.shape()) proto->add_dims(d);
  proto->set_raw_data(reinterpret_cast<const char*>(data.bytes()), data.byte_size());
}

TensorData read_tensor_pb(const std::string& path, std::string* name) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open tensor file " + path + ": " + std::strerror(errno));
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  TensorProto proto;
  bool parsed = false;
  if (regular && st.st_size <= INT_MAX) {
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream stream(&file);
    stream.SetTotalBytesLimit(INT_MAX);
    parsed = proto.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
  }
  ::close(fd);
  if (!regular) throw InputError("tensor file " + path + " is not a regular file");
  if (st.st_size > INT_MAX) throw InputError("tensor file " + path + " is larger than protobuf's 2 GB limit");
  if (!parsed) throw InputError("tensor file " + path + " is not a valid ONNX TensorProto");
  if (name) *name = proto.name();
  return tensor_from_proto(proto, "tensor '" + proto.name() + "' in " + path, Widening::Integers);
}

void write_tensor_pb(const std::string& path, const std::string& name, const TensorData& data) {
  TensorProto proto;
  tensor_to_proto(data, name, &proto);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !proto.SerializeToOstream(&out) || !out.flush()) throw InputError("cannot write tensor file " + path);
}

}  // namespace tessel
