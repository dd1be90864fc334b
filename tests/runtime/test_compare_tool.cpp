// tools/compare.py, the side-by-side a user runs where torch is installed, here on this CPU: a small
// BERT-style encoder exported by Debian's python3-torch, built by the tessel binary, its outputs
// checked against torch's and both timed in rounds; the same with tessel left out; a model that
// cannot be built, and a misspelt system. Reported skipped where /usr/bin/python3 has no torch or onnx.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/runtime/runtime_test_models.h"
#include "tests/skip.h"

using namespace tessel_test;

#ifndef TESSEL_PYTHON_ENV
#define TESSEL_PYTHON_ENV ""
#endif

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// compare.py with `args` appended; its exit status, and what it printed in `output`.
int compare(const std::string& args, std::string& output) {
  const std::string source = TESSEL_SOURCE_DIR;
  return run_command("env " TESSEL_PYTHON_ENV " PYTHONPATH=" + source + "/tools/python:" + source +
                       "/scripts TESSEL_RUNTIME_LIBRARY=" TESSEL_RUNTIME_LIBRARY " /usr/bin/python3 " + source +
                       "/tools/compare.py --tessel " TESSEL_EXE " --target llvm --min-time 0.2 " + args,
                   output);
}

}  // namespace

TEST_CASE("compare.py checks a built model against torch and times both", "[runtime][python][compare]") {
  std::string probe;
  if (access("/usr/bin/python3", X_OK) != 0 || run_command("/usr/bin/python3 -c 'import torch, onnx'", probe) != 0) {
    skip_test("no /usr/bin/python3 with torch and onnx (Debian: python3-torch, python3-onnx)");
    return;
  }
  TempDir dir;
  const std::string skip_torch = " --skip torch_compile,max_autotune,onnxruntime";

  std::string output;
  int status = compare("--model bert_tiny --rounds 2 --out " + dir.file("both") + skip_torch, output);
  INFO(output);
  REQUIRE(status == 0);
  const nlohmann::json both = nlohmann::json::parse(slurp(dir.file("both/compare.json")));
  CHECK(both["check"]["ok"] == true);
  CHECK(both["check"]["max_abs_error"].get<double>() <= both["check"]["bound"].get<double>());
  CHECK(both["check"]["max_abs_reference"].get<double>() > 0);
  for (const char* name : {"tessel", "torch_eager"}) {
    const auto& s = both["systems"][name];
    CHECK(s["median_s"].get<double>() > 0);
    CHECK(s["p10_s"].get<double>() <= s["p90_s"].get<double>());
    CHECK(s["round_medians_s"].size() == 2);
  }
  CHECK(both["systems"].size() == 2);
  CHECK(!both["build"]["tasks"].empty());
  const std::string md = slurp(dir.file("both/compare.md"));
  CHECK(md.find("| tessel |") != std::string::npos);
  CHECK(md.find("| torch_eager |") != std::string::npos);
  CHECK(md.find(": ok") != std::string::npos);
  CHECK(md.find("tessel build:") != std::string::npos);

  output.clear();
  status = compare("--model bert_tiny --out " + dir.file("torch") + " --skip tessel,torch_compile,max_autotune,onnxruntime",
                   output);
  INFO(output);
  REQUIRE(status == 0);
  const nlohmann::json torch_only = nlohmann::json::parse(slurp(dir.file("torch/compare.json")));
  CHECK(torch_only["systems"].size() == 1);
  CHECK(torch_only["systems"]["torch_eager"]["median_s"].get<double>() > 0);
  CHECK(!torch_only.contains("build"));
  CHECK(!torch_only.contains("check"));
  CHECK(slurp(dir.file("torch/compare.md")).find("tessel build:") == std::string::npos);

  output.clear();
  {
    std::ofstream(dir.file("not_a_model.onnx")) << "not a model";
  }
  status = compare("--onnx " + dir.file("not_a_model.onnx") + " --out " + dir.file("bad") + skip_torch, output);
  CHECK(status != 0);
  CHECK(output.find("error: tessel build failed") != std::string::npos);

  // A system misspelt in --skip is bad input, refused before anything runs.
  output.clear();
  status = compare("--model bert_tiny --out " + dir.file("typo") + " --skip max-autotune", output);
  CHECK(status == 2);
  CHECK(output.find("error: --skip: unknown system max-autotune") != std::string::npos);
}
