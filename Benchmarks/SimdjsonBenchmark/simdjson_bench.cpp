// simdjson's minify and full validation (DOM parse) on the documents JSONBenchmark
// writes, timed like JSONBenchmark's own figures (best of 9 rounds, each at least
// ~0.03 s), so that its ratios compare like with like. Built and run by `make bench-json`.
//   simdjson-bench FILE...   prints per file: "<bytes> <minify MB/s> <validate MB/s>"
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

namespace {

template <typename Body>
double best_seconds(Body body) {
  using clock = std::chrono::steady_clock;
  if (!body()) return -1;  // warm up, and refuse a document simdjson rejects
  long iterations = 1;
  for (;;) {
    auto start = clock::now();
    for (long i = 0; i < iterations; i++) body();
    double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (elapsed >= 0.3 / 9 || iterations >= (1L << 20)) break;
    iterations *= 2;
  }
  double best = 1e30;
  for (int round = 0; round < 9; round++) {
    auto start = clock::now();
    for (long i = 0; i < iterations; i++) body();
    double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (elapsed / iterations < best) best = elapsed / iterations;
  }
  return best;
}

}  // namespace

int main(int argc, char **argv) {
  simdjson::dom::parser parser;
  for (int a = 1; a < argc; a++) {
    std::ifstream file(argv[a], std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (!file.good() && !file.eof()) { std::fprintf(stderr, "cannot read %s\n", argv[a]); return 2; }
    simdjson::padded_string input(bytes.data(), bytes.size());
    std::unique_ptr<char[]> out(new char[bytes.size() + simdjson::SIMDJSON_PADDING]);
    size_t written = 0;
    double minify = best_seconds([&] {
      return simdjson::minify(input.data(), input.size(), out.get(), written) == simdjson::SUCCESS;
    });
    double validate = best_seconds([&] {
      simdjson::dom::element doc;
      return parser.parse(input).get(doc) == simdjson::SUCCESS;
    });
    if (minify < 0 || validate < 0) { std::fprintf(stderr, "simdjson refused %s\n", argv[a]); return 1; }
    double mb = bytes.size() / 1e6;
    std::printf("%zu %.1f %.1f\n", bytes.size(), mb / minify, mb / validate);
  }
  std::fprintf(stderr, "simdjson implementation %s\n",
               simdjson::get_active_implementation()->name().c_str());
  return 0;
}
