// ONNX external data: tensors whose bytes live in files beside the model (the way models past
// protobuf's 2 GB limit store their weights). The model is untrusted, so a location must name a
// regular file inside the model's folder and the byte range must lie inside that file. Used by the
// ONNX importer only; the proto type is declared, ONNX's headers stay in the .cpp files.
#pragma once

#include <string>

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace tessel {

// Replaces every externally stored tensor of the graph (initializers, and tensor attributes of its
// nodes) by a tensor holding its bytes in raw_data, read from files under `model_dir`. An empty
// `model_dir` stands for a model given as bytes, whose external data is refused.
//
// Each of these is an InputError naming the tensor and the file: a location that is absolute, has
// a `..` component or resolves (through symbolic links) outside the folder; a file that is not a
// regular file or has other hard links (one of which may lie outside); an offset or length that is
// not a number or reaches past the file's end; a length other than the tensor's byte size; and more
// bytes in all than the files hold (tensors overlapping to multiply the memory a small file costs).
void load_external_data(onnx::GraphProto* graph, const std::string& model_dir);

}  // namespace tessel
