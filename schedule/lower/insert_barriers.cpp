#include "schedule/lower/insert_barriers.h"

namespace tessel {

namespace {

bool writes(const Stmt& s, const std::string& buffer) {
  bool found = false;
  visit(s, [&](const Stmt& n) { found |= (n->op == StmtOp::Store || n->op == StmtOp::Provide) && n->buffer == buffer; });
  return found;
}

bool inside_loop(const std::vector<const StmtNode*>& path) {
  for (const StmtNode* n : path)
    if (n->op == StmtOp::For && n->for_kind != ForKind::ThreadBound) return true;
  return false;
}

Stmt run(const Stmt& s, std::vector<const StmtNode*>& path) {
  path.push_back(s.get());
  std::vector<Stmt> body;
  for (const Stmt& b : s->body) body.push_back(run(b, path));
  path.pop_back();
  Stmt rebuilt = s->body.empty() ? s : with_body(s, body);
  if (rebuilt->op != StmtOp::Allocate || rebuilt->scope != MemScope::Shared) return rebuilt;
  // The allocation's block: [writers of the buffer ..., readers ...].
  const Stmt& inner = rebuilt->body[0];
  std::vector<Stmt> items = inner->op == StmtOp::Seq ? inner->body : std::vector<Stmt>{inner};
  size_t last_writer = items.size();
  for (size_t i = 0; i < items.size(); ++i)
    if (writes(items[i], rebuilt->buffer)) last_writer = i;
  if (last_writer == items.size() || last_writer + 1 == items.size()) return rebuilt;
  std::vector<Stmt> out;
  if (inside_loop(path)) out.push_back(make_barrier());
  out.insert(out.end(), items.begin(), items.begin() + last_writer + 1);
  out.push_back(make_barrier());
  out.insert(out.end(), items.begin() + last_writer + 1, items.end());
  return with_body(rebuilt, {make_seq(out)});
}

}  // namespace

Stmt insert_barriers(const Stmt& s) {
  std::vector<const StmtNode*> path;
  return run(s, path);
}

}  // namespace tessel
