// The small convolutional network `tessel demo` tunes: made here (an ONNX model with seeded random
// weights), so that the demo needs neither a download nor torch. A 32x32 RGB image through three
// convolutions with batch norm, ReLU and a residual connection, global average pooling and a
// classifier of 10 classes: the shapes of a real CNN's blocks, small enough to tune in two minutes.
#pragma once

#include <string>

namespace tessel {

// The model as a serialized ONNX ModelProto (write it to a .onnx file to use it).
std::string demo_cnn_onnx();

}  // namespace tessel
