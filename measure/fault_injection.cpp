#include "measure/fault_injection.h"

#include <sstream>

#include "schedule/te/error.h"

namespace tessel {
namespace {

struct FaultName {
  Fault fault;
  const char* name;
};
constexpr FaultName kFaultNames[] = {
    {Fault::None, "none"}, {Fault::Crash, "crash"}, {Fault::Hang, "hang"},
    {Fault::Wrong, "wrong"}, {Fault::OutOfBounds, "oob"},
};

}  // namespace

const char* to_string(Fault fault) {
  for (const FaultName& f : kFaultNames)
    if (f.fault == fault) return f.name;
  return "none";
}

std::map<int64_t, Fault> parse_fault_plan(const std::string& spec) {
  std::map<int64_t, Fault> plan;
  std::stringstream entries(spec);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    size_t at = entry.find('@');
    auto bad = [&](const std::string& why) {
      return InputError("--inject: bad entry '" + entry + "': " + why +
                        " (expected KIND@INDEX, KIND one of crash, hang, wrong, oob)");
    };
    if (at == std::string::npos) throw bad("no '@'");
    std::string kind = entry.substr(0, at), index = entry.substr(at + 1);
    Fault fault = Fault::None;
    for (const FaultName& f : kFaultNames)
      if (kind == f.name && f.fault != Fault::None) fault = f.fault;
    if (fault == Fault::None) throw bad("unknown fault kind '" + kind + "'");
    if (index.empty() || index.size() > 9 || index.find_first_not_of("0123456789") != std::string::npos)
      throw bad("'" + index + "' is not a candidate index");
    int64_t i = std::stoll(index);
    if (!plan.emplace(i, fault).second) throw bad("candidate " + index + " already has a fault");
  }
  if (plan.empty()) throw InputError("--inject: no faults given");
  return plan;
}

LoweredFunc inject_fault(const LoweredFunc& func, Fault fault, int64_t far_elements) {
  if (fault == Fault::None) return func;
  const BufferParam* out = nullptr;
  for (const BufferParam& p : func.params)
    if (p.is_output) {
      out = &p;
      break;
    }
  if (!out) throw Error("inject_fault: " + func.name + " has no output");
  int64_t elements = num_elements(*out);
  // Values are computed in float32 and converted to and from the output's element type.
  const Type element{out->dtype, 1};
  Expr first = make_cast(kFloat32, make_load(out->name, make_int(0), element));
  auto store = [&](int64_t index, Expr value) {
    return make_store(out->name, make_int(index), make_cast(element, value));
  };
  Stmt code;
  switch (fault) {
    case Fault::Crash: code = store(-(int64_t{1} << 44), make_float(0)); break;
    case Fault::OutOfBounds: code = store(elements + far_elements, make_float(1)); break;
    case Fault::Wrong: code = store(0, make_call(MathFn::Abs, {first}) + make_float(1)); break;
    case Fault::Hang:
      code = make_for("tessel_injected_hang", make_int(0), make_int(int64_t{1} << 62), ForKind::Serial,
                      store(0, first + make_float(1)));
      break;
    case Fault::None: break;
  }
  LoweredFunc result = func;
  result.body = make_seq({func.body, code});
  return result;
}

}  // namespace tessel
