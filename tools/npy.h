// NumPy's .npy files (format 1.0 and 2.0, little-endian, C order) for `tessel run`'s inputs and
// outputs: float32, int64 and bool arrays. The reader treats the file as untrusted: the header is
// parsed strictly and the data's size checked against the shape before anything is allocated.
#pragma once

#include <string>

#include "frontend/graph.h"

namespace tessel {

// InputError naming the file and the problem.
TensorData read_npy(const std::string& path);
void write_npy(const std::string& path, const TensorData& data);

}  // namespace tessel
