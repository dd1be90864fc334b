// The demo CNN's ONNX bytes for the CLI tests, here because the tests' `tessel` (the binary's runner)
// and the library's namespace `tessel` cannot share one translation unit.
#include <string>

#include "frontend/demo_model.h"

namespace tessel_test {

std::string demo_cnn_bytes() { return tessel::demo_cnn_onnx(); }

}  // namespace tessel_test
