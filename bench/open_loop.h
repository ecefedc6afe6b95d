// An open-loop load generator for `sampan serve`'s Predict: calls arrive as
// a Poisson process at a fixed rate, and each is sent at its scheduled time
// whatever the calls before it are doing. One thread sends (asynchronous
// calls, round-robin over the stubs' connections), another reaps the
// completions; latency counts from each call's scheduled time, so a late
// send is charged to the call (no coordinated omission).
//
// A generator of blocking threads cannot promise this: a thread whose call
// is still out when its next arrival comes sends that one late, so the
// arrivals are no longer Poisson and the server sees fewer calls at once
// than the rate implies (the `threads` generator of serving_bench, kept for
// comparison).
#ifndef SAMPAN_BENCH_OPEN_LOOP_H_
#define SAMPAN_BENCH_OPEN_LOOP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "proto/serving.grpc.pb.h"

namespace sampan {

struct OpenLoopCalls {
  // Of the calls scheduled within [from, to) that also ended by `to`.
  std::vector<double> latency_ms;  // completion - scheduled time
  uint64_t examples = 0;           // probabilities answered
  uint64_t errors = 0;
  // Of every call scheduled within [from, to): send - scheduled time.
  std::vector<double> send_lag_ms;
  // The first failure's code and message; empty when none failed.
  std::string first_error;
};

// Sends requests[k], k cycling from a seeded start, at Poisson times of
// `rate` calls/s from now until `to`; each call has a 5 s deadline. Returns
// once every call sent has ended (at most 5 s after `to`). The calling
// thread sends; it runs at `nice` (0: unchanged).
OpenLoopCalls RunOpenLoop(
    const std::vector<std::unique_ptr<serving::Predictor::Stub>>& stubs,
    const std::vector<serving::PredictRequest>& requests, double rate,
    absl::Time from, absl::Time to, uint64_t seed, int nice);

}  // namespace sampan

#endif  // SAMPAN_BENCH_OPEN_LOOP_H_
