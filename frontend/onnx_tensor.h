// Tensors in ONNX's protobuf form (TensorProto) to and from tessel's TensorData: initializers,
// Constant values, tensor attributes and the .pb files of ONNX's test data sets. Every size in a
// proto is untrusted and checked before anything is allocated for it. ONNX's headers stay in the
// onnx_*.cpp files: the proto type is only declared here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/graph.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace tessel {

// The element count of a tensor of `dims`; InputError naming `what` when a dimension is negative or
// the count passes 2^63.
int64_t checked_element_count(const std::vector<int64_t>& dims, const std::string& what);
// elements * element_bytes; InputError naming `what` when it passes 2^63.
int64_t checked_byte_count(int64_t elements, int64_t element_bytes, const std::string& what);

// ONNX's name of an element type ("FLOAT16"), or "type N" for a number it does not define.
std::string onnx_type_name(int32_t onnx_type);
// The DType a value of this ONNX element type has in tessel: FLOAT, INT64 and BOOL; nullopt for the
// others.
std::optional<DType> dtype_from_onnx(int32_t onnx_type);
// Bytes per element of an ONNX element type as stored in raw_data (0 for STRING and unknown types).
int64_t onnx_element_bytes(int32_t onnx_type);

// How a proto's element type may become a DType.
enum class Widening {
  None,      // FLOAT, INT64 and BOOL only
  Integers,  // also the other integer types, widened to INT64 (exact; for constant data)
};

// Checks the proto's sizes without allocating: dims non-negative with a representable byte count,
// and the data field (raw_data or the typed field its element type uses) holding exactly that many
// elements. An externally stored tensor is checked when its data is loaded. InputError naming `what`.
void check_tensor_sizes(const onnx::TensorProto& proto, const std::string& what);

// The proto's data (its sizes checked first). InputError naming `what` and the element type for a
// type that `widening` does not allow, or for data stored externally (load it first).
TensorData tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, Widening widening);
// The proto of `data` named `name`, its data in raw_data.
void tensor_to_proto(const TensorData& data, const std::string& name, onnx::TensorProto* proto);

// A serialized TensorProto file, as in ONNX's test data sets (test_data_set_0/input_0.pb). Integer
// types other than INT64 are widened to INT64; `name`, when given, receives the tensor's name (may
// be empty). InputError naming the file when it cannot be read or parsed or holds an unsupported type.
TensorData read_tensor_pb(const std::string& path, std::string* name = nullptr);
// Writes `data` as a serialized TensorProto named `name`; InputError naming the file on failure.
void write_tensor_pb(const std::string& path, const std::string& name, const TensorData& data);

}  // namespace tessel
