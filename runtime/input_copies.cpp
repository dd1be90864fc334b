// Which inputs' sources a run copies aside before it copies the inputs to their places (executor.h).
#include "runtime/executor.h"

namespace tessel {

namespace {

bool overlap(const ByteRange& x, const ByteRange& y) {
  return !x.empty() && !y.empty() && x.begin < y.end && y.begin < x.end;
}

}  // namespace

std::vector<bool> sources_to_set_aside(const std::vector<ByteRange>& sources, const std::vector<ByteRange>& places) {
  std::vector<bool> aside(sources.size(), false);
  for (size_t i = 0; i < sources.size(); ++i)
    for (size_t j = 0; j < places.size() && !aside[i]; ++j) {
      const bool own_place_exactly = i == j && sources[i].begin == places[j].begin && sources[i].end == places[j].end;
      aside[i] = overlap(sources[i], places[j]) && !own_place_exactly;
    }
  return aside;
}

}  // namespace tessel
