// Reading an ONNX model into tessel's graph IR with ONNX's own reference code (Debian's libonnx):
// parse (protobuf, 2 GB limit) → sizes and structure checked → external data loaded → ONNX checker
// → symbolic input dimensions bound → ONNX shape inference → Graph with a static shape and a dtype
// for every value. The model is untrusted: every problem is an InputError naming the tensor or the
// node; nothing is allocated for a size before it is checked.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/graph.h"

namespace tessel {

struct ImportOptions {
  // Shapes for the model's inputs by name, fixing their symbolic dimensions (a batch size, a
  // sequence length). Every dimension of an input must end up static: one the model leaves
  // symbolic needs a shape here, and a shape given must match the dimensions the model fixes.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // For the CPU (llvm): convolutions and pools with channels in blocks of up to this many
  // (frontend/channel_blocks.h), the float lanes of the CPU's vectors: 16 with AVX-512, 8 with AVX2
  // (the command line takes the host's). 0 keeps every tensor in the model's NCHW. A log tuned with
  // one block has no records for another's tasks.
  int64_t cpu_channel_block = 16;
  // The weights and the values between kernels in float32, or in float16 / bfloat16 with each kernel
  // computing in float32 (frontend/storage_dtype.h); the model's inputs and outputs stay float32.
  DType storage = DType::Float32;
};

// Parses "NAME=8x128" (the name is what precedes the last '='; each extent a positive integer).
// InputError quoting `spec` when it is malformed.
std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& spec);

// Imports the model file at `path`; external data is read from the file's folder.
//
// The resulting Graph: inputs are the model's inputs that are not initializers; initializers and
// Constant nodes become constant values (integer constants of other widths widened to INT64); every
// other value is FLOAT, INT64 or BOOL with a static shape; nodes are in topological order (sorted if
// the file was not); `opset` is the default domain's version. Op types are not checked here (the op
// table reports unsupported ones), but attributes are: a graph attribute (If, Loop, Scan) or one of
// another unsupported kind is an error naming the node.
Graph import_onnx(const std::string& path, const ImportOptions& options);

// The same from a serialized ModelProto. `model_dir` is the folder external data is read from; empty
// refuses external data.
Graph import_onnx_bytes(const std::string& bytes, const ImportOptions& options, const std::string& model_dir = "");

}  // namespace tessel
