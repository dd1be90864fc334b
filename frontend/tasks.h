// Tuning tasks of a model: its subgraphs grouped by workload key (the hash of the DAG's canonical
// text), so that a subgraph that occurs several times — the twelve identical layers of a BERT
// encoder, the repeated blocks of a ResNet stage — is tuned once, weighted by its occurrences.
//
// Each task carries a roofline estimate of its latency on the target (the larger of its arithmetic
// at the target's peak and its bytes at the target's bandwidth), so that a user sees where a model's
// time is likely to go before anything is measured, and the tuner has a model latency to report
// until every task has a measured best.
#pragma once

#include <string>
#include <vector>

#include "frontend/partition.h"
#include "schedule/target_kind.h"

namespace tessel {

// A target's peak arithmetic and memory bandwidth, for the roofline estimate.
struct Roofline {
  double flops_per_s = 0;
  double bytes_per_s = 0;
};
// This machine's CPU (every core, its vector width, an FMA a lane per cycle at a nominal clock) or,
// for cuda, an H100's fp32 figures (tessel measures on whatever GPU it finds; the estimate only
// orders tasks before measurement).
Roofline default_roofline(TargetKind target);

struct ModelTask {
  std::string key;   // the workload key
  std::string name;  // the fused ops and the output shape, e.g. "Conv+Add+Relu 1x64x56x56"
  ComputeDAG dag;
  int weight = 0;                 // occurrences in the model
  std::vector<size_t> subgraphs;  // which subgraphs of the partition it is
  double flops = 0;               // of one occurrence
  double bytes = 0;               // read and written by one occurrence (inputs and output, once)
  double estimate_s = 0;          // roofline latency of one occurrence
};

// The tasks in order of first occurrence.
std::vector<ModelTask> extract_tasks(const Partition& partition, const Roofline& roofline);

// The model's latency from per-task latencies (each task's weight times its latency).
double model_latency(const std::vector<ModelTask>& tasks, const std::vector<double>& task_latency_s);

}  // namespace tessel
