#include "runtime/model_artifact.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "schedule/te/json_fields.h"
#include "schedule/te/tensor_size.h"

namespace tessel {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'L', 'M', 'O', 'D', 'E', 'L'};
constexpr uint32_t kFormatVersion = 3;  // 2: GPU scratch buffers placed in the arena; 3: and GPU inputs and outputs
constexpr size_t kHeaderBytes = 28;
constexpr int64_t kAlign = 64;
constexpr int64_t kMaxElements = int64_t{1} << 40;

std::optional<DType> dtype_named(const std::string& s) {
  if (s == "float32") return DType::Float32;
  if (s == "int64") return DType::Int64;
  if (s == "bool") return DType::Bool;
  if (s == "float16") return DType::Float16;
  if (s == "bfloat16") return DType::BFloat16;
  return std::nullopt;
}

std::optional<PlanBuffer::Kind> kind_named(const std::string& s) {
  for (PlanBuffer::Kind k :
       {PlanBuffer::Kind::Input, PlanBuffer::Kind::Output, PlanBuffer::Kind::Weight, PlanBuffer::Kind::Intermediate})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the file is little-endian, as every machine tessel runs on
  out.insert(out.end(), b, b + sizeof(T));
}

template <typename T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

nlohmann::json launch_json(const CudaLaunch& l) {
  return {{"kernel", l.kernel_name},
          {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
          {"block", {l.block[0], l.block[1], l.block[2]}},
          {"shared", l.dynamic_shared_bytes},
          {"args", l.args}};
}

nlohmann::json manifest_json(const ModelArtifact& a) {
  nlohmann::json j;
  j["target"] = target_kind_name(a.target);
  j["arch"] = a.arch;
  if (!a.cpu_features.empty()) j["cpu_features"] = a.cpu_features;
  j["device"] = a.device;
  j["tool"] = a.tool_version;
  j["model"] = a.model;
  j["arena_bytes"] = a.arena_bytes;
  j["liveness_bound_bytes"] = a.liveness_bound_bytes;
  j["inputs"] = a.inputs;
  j["outputs"] = a.outputs;
  j["buffers"] = nlohmann::json::array();
  for (const PlanBuffer& b : a.buffers)
    j["buffers"].push_back({{"name", b.name},
                            {"dtype", to_string(b.dtype)},
                            {"shape", b.shape},
                            {"kind", to_string(b.kind)},
                            {"offset", b.offset},
                            {"blob", b.blob}});
  j["kernels"] = nlohmann::json::array();
  for (const PlanKernel& k : a.kernels) {
    nlohmann::json kj = {{"name", k.name},       {"entry", k.entry},           {"blob", k.blob},
                         {"args", k.args},       {"workload", k.workload_key}, {"summary", k.summary},
                         {"record", k.record_id}};
    kj["launches"] = nlohmann::json::array();
    for (const CudaLaunch& l : k.launches) kj["launches"].push_back(launch_json(l));
    kj["scratch"] = nlohmann::json::array();
    if (k.scratch_offsets.size() != k.scratch.size())
      throw Error("kernel " + k.name + ": its scratch buffers have no place in the arena");
    for (size_t i = 0; i < k.scratch.size(); ++i) {
      const BufferParam& s = k.scratch[i];
      kj["scratch"].push_back(
          {{"name", s.name}, {"dtype", to_string(s.dtype)}, {"shape", s.shape}, {"offset", k.scratch_offsets[i]}});
    }
    j["kernels"].push_back(kj);
  }
  j["blobs"] = nlohmann::json::array();
  for (const Blob& b : a.blobs)
    j["blobs"].push_back({{"offset", b.offset}, {"size", b.size}, {"checksum", b.checksum}});
  return j;
}

}  // namespace

uint64_t fnv1a64(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

const char* to_string(PlanBuffer::Kind kind) {
  switch (kind) {
    case PlanBuffer::Kind::Input:
      return "input";
    case PlanBuffer::Kind::Output:
      return "output";
    case PlanBuffer::Kind::Weight:
      return "weight";
    case PlanBuffer::Kind::Intermediate:
      return "intermediate";
  }
  return "?";
}

int64_t buffer_bytes(const BufferParam& p) { return num_elements(p) * dtype_bytes(p.dtype); }

int64_t PlanBuffer::bytes() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n * dtype_bytes(dtype);
}

void write_model_artifact(const std::string& path, ModelArtifact a,
                          const std::vector<std::vector<uint8_t>>& blob_data) {
  // The manifest's length depends on the blobs' offsets, which depend on its length: offsets are
  // first laid out relative to the end of the manifest, which is padded to a fixed size.
  a.blobs.assign(blob_data.size(), Blob{});
  int64_t at = 0;
  for (size_t i = 0; i < blob_data.size(); ++i) {
    a.blobs[i].offset = at;
    a.blobs[i].size = static_cast<int64_t>(blob_data[i].size());
    a.blobs[i].checksum = fnv1a64(blob_data[i].data(), blob_data[i].size());
    at += (a.blobs[i].size + kAlign - 1) / kAlign * kAlign;
  }
  const int64_t draft = static_cast<int64_t>(manifest_json(a).dump().size());
  const int64_t manifest_bytes =
      (static_cast<int64_t>(kHeaderBytes) + draft + 64 * static_cast<int64_t>(a.blobs.size()) + 64 + kAlign - 1) /
          kAlign * kAlign -
      static_cast<int64_t>(kHeaderBytes);
  const int64_t data_start = static_cast<int64_t>(kHeaderBytes) + manifest_bytes;
  for (Blob& b : a.blobs) b.offset += data_start;
  std::string manifest = manifest_json(a).dump();
  if (static_cast<int64_t>(manifest.size()) > manifest_bytes) throw Error("artifact manifest larger than its reserve");
  manifest.resize(static_cast<size_t>(manifest_bytes), ' ');  // JSON allows trailing white space

  std::vector<uint8_t> header;
  header.insert(header.end(), kMagic, kMagic + 8);
  put<uint32_t>(header, kFormatVersion);
  put<uint64_t>(header, static_cast<uint64_t>(manifest.size()));
  put<uint64_t>(header, fnv1a64(reinterpret_cast<const uint8_t*>(manifest.data()), manifest.size()));
  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write '" + tmp + "'");
    out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
    out.write(manifest.data(), static_cast<std::streamsize>(manifest.size()));
    for (size_t i = 0; i < blob_data.size(); ++i) {
      out.write(reinterpret_cast<const char*>(blob_data[i].data()), static_cast<std::streamsize>(blob_data[i].size()));
      const int64_t pad = (kAlign - a.blobs[i].size % kAlign) % kAlign;
      for (int64_t p = 0; p < pad; ++p) out.put('\0');
    }
    if (!out) {
      std::remove(tmp.c_str());
      throw Error("cannot write '" + tmp + "' (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("cannot write '" + path + "': " + ec.message());
  }
}

namespace {

// Reads the manifest with every field type- and range-checked (the file is untrusted).
class ManifestReader {
 public:
  ManifestReader(const std::string& path, int64_t file_size, int64_t data_start)
      : path_(path), file_size_(file_size), data_start_(data_start) {}

  ModelArtifact read(const nlohmann::json& root) {
    const JsonObject j(root, path_ + ": ");
    ModelArtifact a;
    const std::string target = req(j.string("target"), j, "target");
    const std::optional<TargetKind> kind = target_kind_named(target);
    if (!kind) fail(j.field("target") + ": unknown target '" + target + "'");
    a.target = *kind;
    a.arch = req(j.string("arch"), j, "arch");
    a.cpu_features = j.string("cpu_features").value_or("");
    a.device = j.string("device").value_or("");
    a.tool_version = j.string("tool").value_or("");
    a.model = j.string("model").value_or("");
    a.arena_bytes = req(j.integer("arena_bytes", 0, int64_t{1} << 50), j, "arena_bytes");
    a.liveness_bound_bytes = j.integer("liveness_bound_bytes", 0, int64_t{1} << 50).value_or(0);
    a.blobs = blobs(root.at("blobs"), j.field("blobs"));
    a.buffers = buffers(root.at("buffers"), j.field("buffers"), a);
    a.inputs = indices(root.at("inputs"), j.field("inputs"), a.buffers.size());
    a.outputs = indices(root.at("outputs"), j.field("outputs"), a.buffers.size());
    for (int64_t i : a.inputs)
      if (a.buffers[i].kind != PlanBuffer::Kind::Input)
        fail(j.field("inputs") + ": buffer " + std::to_string(i) + " is not an input");
    for (int64_t i : a.outputs)
      if (a.buffers[i].kind != PlanBuffer::Kind::Output && a.buffers[i].kind != PlanBuffer::Kind::Weight &&
          a.buffers[i].kind != PlanBuffer::Kind::Input)
        fail(j.field("outputs") + ": buffer " + std::to_string(i) + " is not an output");
    a.kernels = kernels(root.at("kernels"), j.field("kernels"), a);
    return a;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw ArtifactError(message); }

  template <typename T>
  T req(std::optional<T> v, const JsonObject& j, const char* key) const {
    if (!v) fail(j.field(key) + ": missing");
    return *v;
  }

  const nlohmann::json& array(const nlohmann::json& v, const std::string& where) const {
    if (!v.is_array()) fail(where + ": must be an array");
    return v;
  }

  std::vector<int64_t> indices(const nlohmann::json& v, const std::string& where, size_t count) const {
    std::vector<int64_t> out;
    for (const nlohmann::json& e : array(v, where)) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= static_cast<int64_t>(count))
        fail(where + ": an index outside 0.." + std::to_string(count));
      out.push_back(e.get<int64_t>());
    }
    return out;
  }

  std::vector<Blob> blobs(const nlohmann::json& v, const std::string& where) const {
    std::vector<Blob> out;
    for (const nlohmann::json& e : array(v, where)) {
      const JsonObject b(e, where + "[" + std::to_string(out.size()) + "]");
      Blob blob;
      blob.offset = req(b.integer("offset", data_start_, file_size_), b, "offset");
      blob.size = req(b.integer("size", 0, file_size_), b, "size");
      if (blob.offset % kAlign != 0 || blob.offset + blob.size > file_size_)
        fail(b.where() + ": lies outside the file (truncated?)");
      const nlohmann::json& sum = e.at("checksum");
      if (!sum.is_number_unsigned() && !sum.is_number_integer()) fail(b.field("checksum") + ": must be an integer");
      blob.checksum = sum.get<uint64_t>();
      out.push_back(blob);
    }
    return out;
  }

  std::vector<PlanBuffer> buffers(const nlohmann::json& v, const std::string& where, const ModelArtifact& a) const {
    std::vector<PlanBuffer> out;
    for (const nlohmann::json& e : array(v, where)) {
      const JsonObject b(e, where + "[" + std::to_string(out.size()) + "]");
      PlanBuffer p;
      p.name = req(b.string("name"), b, "name");
      const std::optional<DType> dtype = dtype_named(req(b.string("dtype"), b, "dtype"));
      const std::optional<PlanBuffer::Kind> kind = kind_named(req(b.string("kind"), b, "kind"));
      if (!dtype || !kind) fail(b.where() + ": unknown dtype or kind");
      p.dtype = *dtype;
      p.kind = *kind;
      // 16-bit floats are storage between kernels and of weights: a model's inputs and outputs, which
      // callers read and write, are float32, int64 or bool.
      if ((p.kind == PlanBuffer::Kind::Input || p.kind == PlanBuffer::Kind::Output) && Type{p.dtype, 1}.is_half())
        fail(b.field("dtype") + ": an input or output of " + to_string(p.dtype) + " (float32, int64 or bool)");
      int64_t elements = 1;
      for (const nlohmann::json& d : array(e.at("shape"), b.field("shape"))) {
        if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMaxElements / elements)
          fail(b.field("shape") + ": dimensions must be positive and the tensor at most 2^40 elements");
        elements *= d.get<int64_t>();
        p.shape.push_back(d.get<int64_t>());
      }
      p.offset = b.integer("offset", 0, int64_t{1} << 50).value_or(0);
      p.blob = b.integer("blob", -1, static_cast<int64_t>(a.blobs.size()) - 1).value_or(-1);
      if (in_arena(p, a.target) && p.offset + p.bytes() > a.arena_bytes) fail(b.where() + ": lies outside the arena");
      if (p.kind == PlanBuffer::Kind::Weight && (p.blob < 0 || a.blobs[p.blob].size != p.bytes()))
        fail(b.where() + ": its data's size does not match its shape");
      out.push_back(std::move(p));
    }
    return out;
  }

  std::vector<PlanKernel> kernels(const nlohmann::json& v, const std::string& where, const ModelArtifact& a) const {
    std::vector<PlanKernel> out;
    for (const nlohmann::json& e : array(v, where)) {
      const JsonObject k(e, where + "[" + std::to_string(out.size()) + "]");
      PlanKernel p;
      p.name = req(k.string("name"), k, "name");
      p.entry = k.string("entry").value_or("");
      p.blob = req(k.integer("blob", 0, static_cast<int64_t>(a.blobs.size()) - 1), k, "blob");
      p.args = indices(e.at("args"), k.field("args"), a.buffers.size());
      p.workload_key = k.string("workload").value_or("");
      p.summary = k.string("summary").value_or("");
      p.record_id = k.integer("record", -1, int64_t{1} << 62).value_or(-1);
      if (e.contains("launches"))
        for (const nlohmann::json& l : array(e.at("launches"), k.field("launches"))) p.launches.push_back(launch(l, k));
      if (e.contains("scratch"))
        for (const nlohmann::json& s : array(e.at("scratch"), k.field("scratch"))) {
          const JsonObject sj(s, k.field("scratch"));
          BufferParam bp;
          bp.name = req(sj.string("name"), sj, "name");
          const std::optional<DType> dtype = dtype_named(req(sj.string("dtype"), sj, "dtype"));
          if (!dtype) fail(sj.field("dtype") + ": unknown");
          bp.dtype = *dtype;
          int64_t elements = 1;
          for (const nlohmann::json& d : array(s.at("shape"), sj.field("shape"))) {
            if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMaxElements / elements)
              fail(sj.field("shape") + ": dimensions must be positive and the buffer at most 2^40 elements");
            elements *= d.get<int64_t>();
            bp.shape.push_back(d.get<int64_t>());
          }
          const int64_t offset = req(sj.integer("offset", 0, a.arena_bytes), sj, "offset");
          if (offset % kAlign != 0 || offset + buffer_bytes(bp) > a.arena_bytes)
            fail(sj.field("offset") + ": scratch '" + bp.name + "' at arena offset " + std::to_string(offset) +
                 " is not a multiple of 64 or ends past the arena (" + std::to_string(a.arena_bytes) + " bytes)");
          p.scratch.push_back(std::move(bp));
          p.scratch_offsets.push_back(offset);
        }
      out.push_back(std::move(p));
    }
    return out;
  }

  CudaLaunch launch(const nlohmann::json& l, const JsonObject& kernel) const {
    const JsonObject j(l, kernel.field("launches"));
    CudaLaunch c;
    c.kernel_name = req(j.string("kernel"), j, "kernel");
    c.dynamic_shared_bytes = j.integer("shared", 0, int64_t{1} << 20).value_or(0);
    for (const char* key : {"grid", "block"}) {
      const nlohmann::json& dims = array(l.at(key), j.field(key));
      if (dims.size() != 3) fail(j.field(key) + ": must have three dimensions");
      for (size_t d = 0; d < 3; ++d) {
        if (!dims[d].is_number_integer() || dims[d].get<int64_t>() < 1 || dims[d].get<int64_t>() > 2147483647)
          fail(j.field(key) + ": dimensions must be positive");
        (std::string(key) == "grid" ? c.grid : c.block)[d] = dims[d].get<int64_t>();
      }
    }
    for (const nlohmann::json& arg : array(l.at("args"), j.field("args"))) {
      if (!arg.is_string()) fail(j.field("args") + ": must be buffer names");
      c.args.push_back(arg.get<std::string>());
    }
    return c;
  }

  std::string path_;
  int64_t file_size_, data_start_;
};

}  // namespace

ModelArtifact read_model_artifact(const std::string& path, std::vector<uint8_t>& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArtifactError("cannot read '" + path + "': no such file or not readable");
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw ArtifactError("'" + path + "' is not a tessel model (no TSLMODEL header; build one with `tessel build`)");
  const uint32_t version = get<uint32_t>(bytes.data() + 8);
  if (version != kFormatVersion)
    throw ArtifactError("'" + path + "' is a tessel model of format " + std::to_string(version) +
                        "; this tessel reads " + std::to_string(kFormatVersion) + " (rebuild it with this tessel)");
  const uint64_t manifest_size = get<uint64_t>(bytes.data() + 12);
  if (manifest_size > bytes.size() - kHeaderBytes)
    throw ArtifactError("'" + path + "' is truncated (its manifest is cut off)");
  const uint8_t* manifest = bytes.data() + kHeaderBytes;
  if (fnv1a64(manifest, manifest_size) != get<uint64_t>(bytes.data() + 20))
    throw ArtifactError("'" + path + "' is damaged: its manifest's checksum does not match");
  nlohmann::json root;
  try {
    root = parse_json_text(std::string(reinterpret_cast<const char*>(manifest), manifest_size), path);
  } catch (const InputError& e) {
    throw ArtifactError(e.what());
  }
  ModelArtifact a;
  try {
    a = ManifestReader(path, static_cast<int64_t>(bytes.size()), static_cast<int64_t>(kHeaderBytes + manifest_size))
            .read(root);
  } catch (const InputError& e) {
    throw ArtifactError(e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ArtifactError("'" + path + "': a manifest field is missing or of the wrong type (" + e.what() + ")");
  }
  for (size_t i = 0; i < a.blobs.size(); ++i)
    if (fnv1a64(bytes.data() + a.blobs[i].offset, static_cast<size_t>(a.blobs[i].size)) != a.blobs[i].checksum)
      throw ArtifactError("'" + path + "' is damaged: the checksum of blob " + std::to_string(i) + " (" +
                          std::to_string(a.blobs[i].size) + " bytes at " + std::to_string(a.blobs[i].offset) +
                          ") does not match");
  return a;
}

}  // namespace tessel
