// The ONNX loader under the mutation fuzzer: mutants of small valid models (built here, and some
// of ONNX's test models when installed) go through import_onnx_bytes and simplify. Each must import
// or be refused with an InputError; any other exception fails the test, and a crash, an abort or
// (in the sanitizer build) a memory error or undefined behaviour fails the program.
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>

#include "frontend/onnx_import.h"
#include "frontend/simplify.h"
#include "schedule/te/error.h"
#include "tests/frontend/onnx_test_models.h"
#include "tests/fuzz/mutator.h"

using namespace tessel;
using namespace tessel_test;

namespace {

// Small models reaching every step: weights, batch norm and shape chains to fold, a Range that
// shape inference cannot size, and a spread of ONNX's own operator tests.
std::vector<std::string> seeds() {
  std::vector<std::string> out = {serialize(small_conv_model()), serialize(conv_bn_reshape_model()),
                                  serialize(range_from_shape_model())};
  const std::string data = "/usr/share/libonnx-testdata/data/";
  for (const char* model : {"node/test_conv_with_strides_padding", "node/test_reshape_negative_dim", "node/test_slice",
                            "node/test_gather_0", "node/test_batchnorm_example", "node/test_expand_dim_changed",
                            "node/test_where_example", "node/test_constantofshape_int_zeros",
                            "node/test_range_int32_type_negative_delta", "pytorch-converted/test_Conv2d",
                            "pytorch-converted/test_BatchNorm2d_eval", "pytorch-converted/test_PixelShuffle"}) {
    const std::string path = data + model + "/model.onnx";
    if (std::filesystem::exists(path)) out.push_back(read_file(path));
  }
  return out;
}

}  // namespace

TEST_CASE("mutated ONNX models import or are refused with an InputError", "[fuzz][frontend][onnx]") {
  const std::vector<std::string> models = seeds();
  int64_t mutant = 0;
  const int64_t accepted = tessel_fuzz::fuzz(models, 6000, 20260615, [&](const std::string& bytes) {
    ++mutant;
    try {
      Graph graph = import_onnx_bytes(bytes, {});
      simplify(graph);
      return true;
    } catch (const InputError&) {
      return false;
    } catch (const std::exception& e) {
      FAIL("mutant " << mutant << " threw " << typeid(e).name() << ": " << e.what());
    }
    return false;
  });
  std::cout << "fuzz_onnx_loader: " << accepted << " of " << mutant << " mutants of " << models.size()
            << " seeds imported\n";
  CHECK(accepted > 0);  // the mutants reach past the parser
}
