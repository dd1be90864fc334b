// Parser for the `expr` parameter of the elementwise template: infix float expressions over the
// inputs x, y, z, e.g. `sigmoid(relu(x)*2+1)`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "schedule/te/expr.h"

namespace tessel {

// Parses `text`; `input(name)` returns the Expr an input name stands for (e.g. a TensorRead of x at
// the current indices). `inputs` lists the names allowed. Throws InputError with the column of the
// problem, e.g. "error in expr at column 7: unknown function 'foo'". Nesting deeper than 256 levels
// and more than 512 operators and calls are refused the same way (elementwise_parser.cpp says why);
// the parse takes time linear in the text.
Expr parse_elementwise_expr(const std::string& text, const std::vector<std::string>& inputs,
                            const std::function<Expr(const std::string&)>& input);

}  // namespace tessel
