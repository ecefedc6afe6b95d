// The model and the requests of bench/serving_bench.cc.
//
// The model: an exported model directory (trainer/model_export.h: the
// sparse part through ExportSparsePart, dense.bin through SaveDenseModel,
// then FinishModelDir) of an FM or DeepFM on Criteo's 39 fields, holding the
// signs of a vocabulary of ceil(rows / 26) values per field: 26 categorical
// fields of as many tokens, plus the integer fields' buckets of the same
// values (found by parsing vocabulary lines with the one Criteo parser).
// Rows are small random floats, a function of the key; the key set is what
// matters.
//
// The requests: a pool of unlabeled Criteo lines whose every field takes a
// value of the vocabulary, Zipf(1) over its rank (rank = floor((V+1)^u) - 1)
// or uniform; a request of n examples is n consecutive lines of the pool, as
// raw lines or as pre-hashed examples (the same lines parsed here).
#ifndef SAMPAN_BENCH_SERVING_BENCH_MODEL_H_
#define SAMPAN_BENCH_SERVING_BENCH_MODEL_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/flags.h"
#include "proto/job.pb.h"
#include "proto/serving.pb.h"

namespace sampan {

inline constexpr int kBenchFields = 39;

struct BenchModelOptions {
  std::string model = "DEEPFM";  // FM or DEEPFM (a ModelType name)
  int64_t rows = 1000000;
  int dim = 16;
  std::vector<int> hidden = {400, 400, 400};
  bool zipf = true;  // else uniform
  int pool = 50000;  // examples drawn
};

// The job the model is written with (exits 2 naming --model if unknown).
JobConfig BenchJob(const BenchModelOptions& o);

// Writes the model into `dir` unless a complete one of the same model is
// there already; returns its rows. Exits on errors.
size_t WriteBenchModel(const BenchModelOptions& o, const std::string& dir);

// An unlabeled Criteo line with vocabulary value values[f] in field f.
std::string LineOf(const std::vector<uint64_t>& values);

// o.pool example lines, the same for the same options.
std::vector<std::string> ExamplePool(const BenchModelOptions& o);

// Requests of `size` examples, consecutive lines of `pool`, in `form`
// "lines" or "examples" (pre-hashed); pool.size() / size of them.
std::vector<serving::PredictRequest> Requests(
    const std::vector<std::string>& pool, int size, const std::string& form);

// Helpers of the serving benches' drivers.
//
// The value of --name (def when absent); exits 2 naming it when it is not a
// number.
double NumberFlag(const Flags& flags, const char* name, double def);
// A field of /proc/<pid>/status in MB ("VmRSS", "VmHWM", "RssAnon",
// "RssFile"); pid 0 reads this process's; 0 when absent.
double ProcStatusMb(pid_t pid, const std::string& field);

}  // namespace sampan

#endif  // SAMPAN_BENCH_SERVING_BENCH_MODEL_H_
