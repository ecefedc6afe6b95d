// The model and requests of bench/serving_bench.cc.
#include "bench/serving_bench_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/config.h"
#include "common/hash.h"
#include "trainer/data/formats.h"
#include "trainer/local_job.h"
#include "trainer/model/model_io.h"
#include "trainer/model_export.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

// Value `v` of field `f` (0-based, Criteo order) as the line's text.
std::string FieldText(int f, uint64_t v) {
  if (f < kCriteoIntFields) return absl::StrCat(v);
  return absl::StrFormat("%08x", uint32_t(Fmix64((uint64_t(f) << 40) ^ v)));
}

}  // namespace

std::string LineOf(const std::vector<uint64_t>& values) {
  std::string line;
  for (int f = 0; f < kBenchFields; ++f) {
    if (f > 0) line += '\t';
    line += FieldText(f, values[f]);
  }
  return line;
}

namespace {

ParseOptions LineParse() {
  ParseOptions p;
  p.format = DataFileFormat::kCriteoUnlabeled;
  return p;
}

// Values per field: the vocabulary V of each categorical field (integer
// fields take 0..V-1 too, which bucket into ~100 signs each).
uint64_t VocabPerField(int64_t rows) {
  return std::max<uint64_t>(1,
                            (rows + kCriteoCatFields - 1) / kCriteoCatFields);
}

// Every sign of the vocabulary, sorted.
std::vector<uint64_t> VocabularyKeys(uint64_t vocab) {
  absl::flat_hash_set<uint64_t> keys;
  keys.reserve(vocab * kCriteoCatFields + 4096);
  std::vector<uint64_t> values(kBenchFields), signs;
  std::vector<uint16_t> slots;
  std::vector<float> dense;
  float label = 0;
  for (uint64_t v = 0; v < vocab; ++v) {
    std::fill(values.begin(), values.end(), v);
    signs.clear();
    slots.clear();
    if (!ParseLine(LineOf(values), LineParse(), &label, &signs, &slots, &dense)
             .ok()) {
      std::fprintf(stderr, "vocabulary line %lu does not parse\n", v);
      std::exit(1);
    }
    keys.insert(signs.begin(), signs.end());
  }
  std::vector<uint64_t> sorted(keys.begin(), keys.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

}  // namespace

JobConfig BenchJob(const BenchModelOptions& o) {
  JobConfig config = DefaultJobConfig();
  config.set_name("serving-bench");
  ModelType type;
  if (!ModelType_Parse(o.model, &type)) {
    std::fprintf(stderr, "--model=%s: expected FM or DEEPFM\n",
                 o.model.c_str());
    std::exit(2);
  }
  config.mutable_model()->set_type(type);
  config.mutable_model()->set_embedding_dim(o.dim);
  config.mutable_model()->clear_hidden();
  for (int h : o.hidden) config.mutable_model()->add_hidden(h);
  config.mutable_data()->set_format(CRITEO_TSV);
  return config;
}

size_t WriteBenchModel(const BenchModelOptions& o, const std::string& dir) {
  const JobConfig config = BenchJob(o);
  JobConfig existing;
  absl::StatusOr<ModelManifest> have = ReadModelManifest(dir, &existing);
  if (have.ok() && existing.model().SerializeAsString() ==
                       config.model().SerializeAsString()) {
    absl::StatusOr<uint64_t> n = CountSparseRows(dir, *have);
    if (n.ok()) {
      std::printf("model %s: reusing %lu rows\n", dir.c_str(), *n);
      return *n;
    }
  }
  fs::remove_all(dir);
  const absl::Time start = absl::Now();
  std::vector<uint64_t> keys = VocabularyKeys(VocabPerField(o.rows));
  const size_t n = keys.size();
  absl::StatusOr<LocalTrainOptions> local = LocalOptionsFromJob(config);
  if (!local.ok()) {
    std::fprintf(stderr, "%s\n", local.status().ToString().c_str());
    std::exit(2);
  }
  const CtrModel model(local->model);
  const int row_dim = model.row_dim();
  // Small random rows, a function of the key alone.
  RowReader read = [row_dim](absl::Span<const uint64_t> chunk, float* out) {
    for (uint64_t key : chunk) {
      uint64_t h = key;
      for (int i = 0; i < row_dim; ++i) {
        h = Mix64(h + i);
        *out++ = (float(h >> 40) / float(1 << 24) - 0.5f) * 0.1f;
      }
    }
    return absl::OkStatus();
  };
  absl::Status s = ExportSparsePart(dir, 0, std::move(keys), row_dim, read);
  DenseModelState dense;
  dense.weights.resize(model.dense_size());
  if (!dense.weights.empty()) model.InitDense(dense.weights.data());
  if (s.ok()) s = SaveDenseModel(DenseModelPath(dir), model, dense);
  if (s.ok()) s = FinishModelDir(dir, config, ModelManifest{});
  if (!s.ok()) {
    std::fprintf(stderr, "writing %s: %s\n", dir.c_str(), s.ToString().c_str());
    std::exit(1);
  }
  std::printf("model %s: %zu rows, %zu dense weights, written in %.1f s\n",
              dir.c_str(), n, model.dense_size(),
              absl::ToDoubleSeconds(absl::Now() - start));
  return n;
}

std::vector<std::string> ExamplePool(const BenchModelOptions& o) {
  const uint64_t vocab = VocabPerField(o.rows);
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(0, 1);
  auto draw = [&]() -> uint64_t {
    if (!o.zipf) return uint64_t(u(rng) * vocab) % vocab;
    // Zipf(1) over ranks 0..V-1: rank r with probability ~ 1 / (r + 1).
    return std::min<uint64_t>(
        vocab - 1, uint64_t(std::pow(double(vocab) + 1, u(rng))) - 1);
  };
  std::vector<std::string> pool;
  std::vector<uint64_t> values(kBenchFields);
  for (int i = 0; i < o.pool; ++i) {
    for (uint64_t& v : values) v = draw();
    pool.push_back(LineOf(values));
  }
  return pool;
}

std::vector<serving::PredictRequest> Requests(
    const std::vector<std::string>& pool, int size, const std::string& form) {
  std::vector<serving::PredictRequest> out(
      std::max<size_t>(1, pool.size() / size));
  std::vector<uint64_t> signs;
  std::vector<uint16_t> slots;
  std::vector<float> dense;
  float label = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    for (int i = 0; i < size; ++i) {
      const std::string& line = pool[(k * size + i) % pool.size()];
      if (form == "lines") {
        out[k].add_lines(line);
        continue;
      }
      signs.clear();
      slots.clear();
      dense.clear();
      (void)ParseLine(line, LineParse(), &label, &signs, &slots, &dense);
      serving::Example* e = out[k].add_examples();
      e->mutable_signs()->Add(signs.begin(), signs.end());
      e->mutable_slots()->Add(slots.begin(), slots.end());
      e->mutable_dense()->Add(dense.begin(), dense.end());
    }
  }
  return out;
}

double NumberFlag(const Flags& flags, const char* name, double def) {
  double v = def;
  if (flags.Has(name) && !absl::SimpleAtod(flags.Get(name), &v)) {
    std::fprintf(stderr, "--%s: expected a number\n", name);
    std::exit(2);
  }
  return v;
}

double ProcStatusMb(pid_t pid, const std::string& field) {
  std::ifstream in(pid > 0 ? absl::StrCat("/proc/", pid, "/status")
                           : std::string("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    double kb = 0;
    std::vector<std::string> f =
        absl::StrSplit(line.substr(field.size() + 1), absl::ByAnyChar(" \t"),
                       absl::SkipEmpty());
    if (!f.empty() && absl::SimpleAtod(f[0], &kb)) return kb / 1024;
  }
  return 0;
}

}  // namespace sampan
