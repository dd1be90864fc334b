// The demo CNN's ONNX bytes, an input image and an output file's values for the CLI tests, here because the tests' `tessel`
// (the binary's runner) and the library's namespace `tessel` cannot share one translation unit.
#include <string>
#include <vector>

#include "frontend/demo_model.h"
#include "frontend/onnx_tensor.h"
#include "tools/npy.h"

namespace tessel_test {

std::string demo_cnn_bytes() { return tessel::demo_cnn_onnx(); }

void write_demo_image(const std::string& path) {
  std::vector<float> image(3 * 32 * 32);  // 1x3x32x32, values in [-1, 1)
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(i % 17) / 8.5f - 1.0f;
  tessel::write_tensor_pb(path, "input", tessel::TensorData::of_floats({1, 3, 32, 32}, image));
}

std::vector<float> npy_floats(const std::string& path) { return tessel::read_npy(path).floats(); }

}  // namespace tessel_test
