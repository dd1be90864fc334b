#include "frontend/onnx_import.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <set>
#include <unordered_map>

#include "frontend/onnx_external_data.h"
#include "frontend/onnx_import_steps.h"
#include "frontend/onnx_tensor.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "schedule/te/error.h"

namespace tessel {

using onnx::ModelProto;

std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& spec) {
  const size_t eq = spec.rfind('=');
  const auto bad = [&](const std::string& why) {
    return InputError("input shape '" + spec + "': " + why + " (expected NAME=8x128)");
  };
  if (eq == std::string::npos || eq == 0) throw bad("no input name before '='");
  std::vector<int64_t> shape;
  size_t start = eq + 1;
  while (true) {
    const size_t end = std::min(spec.find('x', start), spec.size());
    int64_t extent = 0;
    bool ok = end > start;
    for (size_t i = start; ok && i < end; ++i)
      ok = spec[i] >= '0' && spec[i] <= '9' && !__builtin_mul_overflow(extent, 10, &extent) &&
           !__builtin_add_overflow(extent, spec[i] - '0', &extent);
    if (!ok || extent == 0) throw bad("'" + spec.substr(start, end - start) + "' is not a positive integer");
    shape.push_back(extent);
    if (end == spec.size()) break;
    start = end + 1;
  }
  return {spec.substr(0, eq), shape};
}

namespace {

// Protobuf refuses messages past 2 GB (INT_MAX bytes); models larger than that keep their weights
// as external data.
bool parse_model(google::protobuf::io::ZeroCopyInputStream* input, ModelProto* model) {
  google::protobuf::io::CodedInputStream stream(input);
  stream.SetTotalBytesLimit(INT_MAX);
  return model->ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
}

ModelProto read_model_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open the model: " + std::string(std::strerror(errno)));
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ModelProto model;
  bool parsed = false;
  if (regular && st.st_size <= INT_MAX) {
    google::protobuf::io::FileInputStream file(fd);
    parsed = parse_model(&file, &model);
  }
  ::close(fd);
  if (!regular) throw InputError("the model is not a regular file");
  if (st.st_size > INT_MAX)
    throw InputError("the model is larger than protobuf's 2 GB limit (weights that large belong in external data)");
  if (!parsed) throw InputError("not a valid ONNX model (the protobuf does not parse)");
  return model;
}

// The default domain's opset, which must be one this build of ONNX knows.
int64_t default_opset(const ModelProto& model) {
  const int max_known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  for (const auto& import : model.opset_import()) {
    if (!import.domain().empty() && import.domain() != "ai.onnx") continue;
    if (import.version() < 1 || import.version() > max_known)
      throw InputError("the model's default ONNX opset " + std::to_string(import.version()) +
                       " is not one this build of ONNX knows (1 to " + std::to_string(max_known) + ")");
    return import.version();
  }
  throw InputError("the model imports no opset of the default ONNX domain");
}

// ONNX's messages span lines; an error tessel prints is one.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text;
}

void run_checker(const ModelProto& model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw InputError("the ONNX checker refuses the model: " + one_line(e.what()));
  }
}

std::string input_names(const onnx::GraphProto& graph, const std::set<std::string>& initializers) {
  std::string names;
  for (const auto& input : graph.input())
    if (!initializers.count(input.name())) names += (names.empty() ? "'" : ", '") + input.name() + "'";
  return names.empty() ? "none" : names;
}

// Fixes one input's shape: each dimension the model leaves symbolic takes the bound extent.
void bind_input(onnx::ValueInfoProto* input, const std::vector<int64_t>* bound) {
  const std::string what = "input '" + input->name() + "'";
  if (!input->type().has_tensor_type()) return;  // reported as not a tensor when converted
  auto* tensor = input->mutable_type()->mutable_tensor_type();
  if (!tensor->has_shape()) {
    if (!bound) throw InputError(what + " has no shape in the model; give it one (" + input->name() + "=8x128)");
    for (int64_t extent : *bound) tensor->mutable_shape()->add_dim()->set_dim_value(extent);
    return;
  }
  auto* shape = tensor->mutable_shape();
  if (bound && static_cast<int>(bound->size()) != shape->dim_size())
    throw InputError(what + " has rank " + std::to_string(shape->dim_size()) + ", but the shape given for it, " +
                     shape_string(*bound) + ", has rank " + std::to_string(bound->size()));
  for (int k = 0; k < shape->dim_size(); ++k) {
    auto* dim = shape->mutable_dim(k);
    const std::string name = dim->has_dim_param() ? "'" + dim->dim_param() + "'" : "(unnamed)";
    if (dim->has_dim_value()) {
      if (bound && (*bound)[k] != dim->dim_value())
        throw InputError(what + ": dimension " + std::to_string(k) + " is " + std::to_string(dim->dim_value()) +
                         " in the model, but the shape given for it says " + std::to_string((*bound)[k]));
      continue;
    }
    if (!bound)
      throw InputError(what + ": dimension " + std::to_string(k) + " " + name +
                       " is symbolic; give the input a shape (" + input->name() + "=...)");
    dim->set_dim_value((*bound)[k]);
  }
}

void bind_input_shapes(onnx::GraphProto* graph, const ImportOptions& options) {
  std::set<std::string> initializers;
  for (const auto& init : graph->initializer()) initializers.insert(init.name());
  for (const auto& [name, shape] : options.input_shapes) {
    bool found = false;
    for (const auto& input : graph->input()) found = found || (input.name() == name && !initializers.count(name));
    if (!found)
      throw InputError("a shape is given for '" + name +
                       "', which is not an input of the model (inputs: " + input_names(*graph, initializers) + ")");
  }
  for (auto& input : *graph->mutable_input()) {
    if (initializers.count(input.name())) continue;
    auto it = options.input_shapes.find(input.name());
    bind_input(&input, it == options.input_shapes.end() ? nullptr : &it->second);
  }
}

// ONNX's shape inference, strict: node errors and type mismatches are errors, and shape
// computations (Shape → Gather → Concat feeding a Reshape) are propagated as data.
void infer_shapes(ModelProto* model) {
  const onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/1, /*data_prop=*/true);
  std::unordered_map<std::string, onnx::TensorShapeProto> shape_data;
  try {
    onnx::shape_inference::InferShapes(*model, guarded_schema_registry(), options, &shape_data);
  } catch (const std::exception& e) {
    throw InputError("ONNX shape inference fails: " + one_line(e.what()));
  }
}

// The steps in order: each checks what the next one trusts (ONNX's checker trusts sizes, shape
// inference trusts the checker, the conversion trusts inference).
Graph import_model(ModelProto model, const ImportOptions& options, const std::string& model_dir) {
  onnx::GraphProto* graph = model.mutable_graph();
  name_unnamed_nodes(graph);
  check_supported_features(*graph);
  const int64_t opset = default_opset(model);
  // Local functions serve only nodes of other domains, which are refused.
  model.clear_functions();
  model.clear_training_info();
  check_declared_sizes(*graph);
  sort_nodes(graph);
  load_external_data(graph, model_dir);
  run_checker(model);
  constants_to_initializers(&model);
  bind_input_shapes(graph, options);
  infer_shapes_folding_constants(&model, opset, infer_shapes);
  return graph_from_proto(model, opset);
}

// Every message names the model it is about.
template <typename F>
Graph with_source(const std::string& source, F&& import) {
  try {
    return import();
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
}

}  // namespace

Graph import_onnx(const std::string& path, const ImportOptions& options) {
  return with_source(path, [&] {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    return import_model(read_model_file(path), options, dir);
  });
}

Graph import_onnx_bytes(const std::string& bytes, const ImportOptions& options, const std::string& model_dir) {
  return with_source("the ONNX model", [&] {
    ModelProto model;
    if (bytes.size() > INT_MAX) throw InputError("the model is larger than protobuf's 2 GB limit");
    google::protobuf::io::ArrayInputStream input(bytes.data(), static_cast<int>(bytes.size()));
    if (!parse_model(&input, &model)) throw InputError("not a valid ONNX model (the protobuf does not parse)");
    return import_model(std::move(model), options, model_dir);
  });
}

}  // namespace tessel
