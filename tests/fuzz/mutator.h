// A deterministic mutation fuzzer for tessel's readers of untrusted text: seeds (valid inputs) are
// mutated by byte flips, insertions, deletions, duplication of spans, splices between seeds and
// "interesting" tokens (huge and negative numbers, 1e400, NaN, deep nesting), and each mutant is
// handed to the reader under test. Given the same seed list and iteration count it produces the
// same mutants, so a failure reproduces; under the sanitizer build (make test-sanitize) a memory
// error or undefined behaviour in a reader fails the test.
#pragma once

#include <cctype>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tessel_fuzz {

class Mutator {
 public:
  Mutator(std::vector<std::string> seeds, uint64_t rng_seed) : seeds_(std::move(seeds)), rng_(rng_seed) {}

  // One mutant of a seed: between one and four mutations stacked.
  std::string next() {
    std::string s = seeds_[pick(seeds_.size())];
    const int n = 1 + static_cast<int>(pick(4));
    for (int i = 0; i < n; ++i) mutate(s);
    return s;
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  void mutate(std::string& s) {
    static const std::vector<std::string> tokens = {
        "1e400", "-1e400", "NaN", "nan", "inf", "-1", "0", "9223372036854775807", "18446744073709551616",
        "-9223372036854775808", "4294967296", "1e-400", "\"\"", "null", "true", "[]", "{}", "[[[[[[[[", "]]]]]]]]",
        "((((((((", "))))))))", "\\u0000", "\xff\xfe", ",", ":", "\"", "x", "99999999999x99999999999"};
    switch (pick(7)) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // delete a span
        if (!s.empty()) {
          const size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 2:  // insert a token
        s.insert(pick(s.size() + 1), tokens[pick(tokens.size())]);
        break;
      case 3:  // replace a number with a token
        for (size_t i = pick(s.size() + 1); i < s.size(); ++i)
          if (std::isdigit(static_cast<unsigned char>(s[i]))) {
            size_t end = i;
            while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.')) ++end;
            s.replace(i, end - i, tokens[pick(tokens.size())]);
            break;
          }
        break;
      case 4:  // duplicate a span
        if (!s.empty() && s.size() < 100000) {
          const size_t at = pick(s.size());
          const size_t len = 1 + pick(std::min<size_t>(64, s.size() - at));
          s.insert(pick(s.size() + 1), s.substr(at, len));
        }
        break;
      case 5: {  // splice with another seed
        const std::string& other = seeds_[pick(seeds_.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
        break;
      }
      default:  // truncate
        s.resize(pick(s.size() + 1));
        break;
    }
  }

  std::vector<std::string> seeds_;
  std::mt19937_64 rng_;
};

// Feeds `iterations` mutants to `reader`; the reader returns normally or throws what the product
// throws for bad input (the caller's catch decides which exceptions are allowed). Returns how many
// mutants the reader accepted, so that a test can check that the fuzzing reached past the parser.
inline int64_t fuzz(const std::vector<std::string>& seeds, int64_t iterations, uint64_t rng_seed,
                    const std::function<bool(const std::string&)>& reader) {
  Mutator m(seeds, rng_seed);
  int64_t accepted = 0;
  for (int64_t i = 0; i < iterations; ++i) accepted += reader(m.next()) ? 1 : 0;
  return accepted;
}

}  // namespace tessel_fuzz
