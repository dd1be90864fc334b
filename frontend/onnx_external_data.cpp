#include "frontend/onnx_external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "frontend/onnx_tensor.h"
#include "onnx/onnx_pb.h"
#include "schedule/te/error.h"

namespace tessel {

using onnx::TensorProto;

namespace {

// Where one tensor's bytes are, as the proto's external_data entries say.
struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;
};

int64_t parse_count(const std::string& text, const std::string& key, const std::string& what) {
  int64_t value = 0;
  bool ok = !text.empty();
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(value, 10, &value) &&
         !__builtin_add_overflow(value, c - '0', &value);
  }
  if (!ok) throw InputError(what + ": external data " + key + " '" + text + "' is not a non-negative 64-bit integer");
  return value;
}

ExternalRef parse_ref(const TensorProto& tensor, const std::string& what) {
  ExternalRef ref;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location")
      ref.location = entry.value();
    else if (entry.key() == "offset")
      ref.offset = parse_count(entry.value(), "offset", what);
    else if (entry.key() == "length")
      ref.length = parse_count(entry.value(), "length", what);
    else if (entry.key() != "checksum")  // a SHA-1 ONNX itself never checks
      throw InputError(what + ": unknown external data key '" + entry.key() + "'");
  }
  if (ref.location.empty()) throw InputError(what + ": stored externally without a location");
  return ref;
}

// The location as written must stay inside the folder by itself; symbolic links are checked on
// the resolved path (realpath) after this.
void check_location_text(const std::string& location, const std::string& what) {
  if (location.find('\0') != std::string::npos) throw InputError(what + ": its location holds a NUL byte");
  if (location.front() == '/')
    throw InputError(what + ": external data file '" + location +
                     "' is an absolute path; it must be relative to the model's folder");
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0)
      throw InputError(what + ": external data file '" + location +
                       "' has a '..' component; it must stay inside the model's folder");
    start = end + 1;
  }
}

std::string real_path(const std::string& path, const std::string& what, const std::string& location) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved)
    throw InputError(what + ": external data file '" + location + "' cannot be opened: " + std::strerror(errno));
  std::string out(resolved);
  std::free(resolved);
  return out;
}

class ExternalDataLoader {
 public:
  explicit ExternalDataLoader(const std::string& model_dir) : model_dir_(model_dir) {}

  void load(TensorProto* tensor, const std::string& what) {
    if (model_dir_.empty())
      throw InputError(what + ": the model stores it in an external file, but was given as bytes without a folder");
    const ExternalRef ref = parse_ref(*tensor, what);
    check_location_text(ref.location, what);
    const std::string file = resolve(ref.location, what);
    std::string bytes = read_range(file, ref, expected_bytes(*tensor, what), what);
    tensor->clear_external_data();
    tensor->set_data_location(TensorProto::DEFAULT);
    tensor->set_raw_data(std::move(bytes));
  }

 private:
  // The real path of the location; it must lie under the folder's real path.
  std::string resolve(const std::string& location, const std::string& what) {
    if (real_dir_.empty()) real_dir_ = real_path(model_dir_, "the model's folder", model_dir_);
    const std::string file = real_path(model_dir_ + "/" + location, what, location);
    const std::string prefix = real_dir_ == "/" ? real_dir_ : real_dir_ + "/";
    if (file.compare(0, prefix.size(), prefix) != 0)
      throw InputError(what + ": external data file '" + location + "' resolves to " + file +
                       ", outside the model's folder " + real_dir_);
    return file;
  }

  static int64_t expected_bytes(const TensorProto& tensor, const std::string& what) {
    const int64_t element_bytes = onnx_element_bytes(tensor.data_type());
    if (element_bytes == 0)
      throw InputError(what + ": element type " + onnx_type_name(tensor.data_type()) + " cannot be stored externally");
    const std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    return checked_byte_count(checked_element_count(dims, what), element_bytes, what);
  }

  std::string read_range(const std::string& file, const ExternalRef& ref, int64_t expected, const std::string& what) {
    const std::string where = what + ": external data file '" + ref.location + "'";
    // O_NONBLOCK: opening a FIFO must not wait for a writer before fstat says what it is.
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) throw InputError(where + " cannot be opened: " + std::strerror(errno));
    try {
      struct stat st {};
      if (::fstat(fd, &st) != 0) throw InputError(where + " cannot be read: " + std::strerror(errno));
      if (!S_ISREG(st.st_mode)) throw InputError(where + " is not a regular file");
      if (st.st_nlink > 1)
        throw InputError(where + " has " + std::to_string(st.st_nlink) +
                         " hard links; one may lie outside the model's folder, so it is refused");
      const int64_t length = ref.length.value_or(st.st_size > ref.offset ? st.st_size - ref.offset : 0);
      int64_t end = 0;
      if (__builtin_add_overflow(ref.offset, length, &end) || end > st.st_size)
        throw InputError(where + ": offset " + std::to_string(ref.offset) + " + length " + std::to_string(length) +
                         " reaches past its end (" + std::to_string(st.st_size) + " bytes)");
      if (length != expected)
        throw InputError(where + ": length " + std::to_string(length) + " differs from the tensor's " +
                         std::to_string(expected) + " bytes");
      account(st, where, length);
      std::string bytes = read_all(fd, ref.offset, length, where);
      ::close(fd);
      return bytes;
    } catch (...) {
      ::close(fd);
      throw;
    }
  }

  // Tensors may share a file but not make it count twice: the bytes read in all stay within the
  // sizes of the distinct files read.
  void account(const struct stat& st, const std::string& where, int64_t length) {
    const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    if (file_sizes_.emplace(id, st.st_size).second) budget_ += st.st_size;
    if (__builtin_add_overflow(loaded_, length, &loaded_) || loaded_ > budget_)
      throw InputError(where +
                       ": the model's tensors read more bytes than its external files hold (overlapping ranges)");
  }

  static std::string read_all(int fd, int64_t offset, int64_t length, const std::string& where) {
    std::string bytes(static_cast<size_t>(length), '\0');
    int64_t done = 0;
    while (done < length) {
      const ssize_t n = ::pread(fd, bytes.data() + done, static_cast<size_t>(std::min<int64_t>(length - done, INT_MAX)),
                                offset + done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw InputError(where + " cannot be read: " + (n < 0 ? std::strerror(errno) : "it ended early"));
      done += n;
    }
    return bytes;
  }

  std::string model_dir_;
  std::string real_dir_;
  std::map<std::pair<dev_t, ino_t>, int64_t> file_sizes_;
  int64_t budget_ = 0;
  int64_t loaded_ = 0;
};

bool is_external(const TensorProto& tensor) {
  return tensor.has_data_location() && tensor.data_location() == TensorProto::EXTERNAL;
}

}  // namespace

void load_external_data(onnx::GraphProto* graph, const std::string& model_dir) {
  ExternalDataLoader loader(model_dir);
  for (TensorProto& tensor : *graph->mutable_initializer())
    if (is_external(tensor)) loader.load(&tensor, "initializer '" + tensor.name() + "'");
  for (onnx::NodeProto& node : *graph->mutable_node())
    for (onnx::AttributeProto& attr : *node.mutable_attribute())
      if (attr.has_t() && is_external(attr.t()))
        loader.load(attr.mutable_t(), "attribute '" + attr.name() + "' of node '" + node.name() + "'");
}

}  // namespace tessel
