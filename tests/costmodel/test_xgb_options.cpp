// The cost model's settings by name: objectives, inputs and neural-ranker designs round-trip through
// their names, other names are refused without any command-line flag in sight, and the defaults
// and the objective-input rule hold.
#include <catch2/catch.hpp>

#include "costmodel/xgb_options.h"
#include "schedule/te/error.h"

using namespace tessel;

namespace {

using Objective = XGBoostModelOptions::Objective;
using Input = XGBoostModelOptions::Input;

}  // namespace

TEST_CASE("objectives and inputs round-trip through their names", "[costmodel][options]") {
  CHECK(objective_named("rank") == Objective::Rank);
  CHECK(objective_named("packsum") == Objective::PackSum);
  for (Objective o : {Objective::Rank, Objective::PackSum}) CHECK(objective_named(objective_name(o)) == o);
  for (const char* other : {"", "Rank", "pack-sum", "pairwise", "--objective"}) {
    INFO(other);
    CHECK_FALSE(objective_named(other).has_value());
  }

  CHECK(model_input_named("rows") == Input::Rows);
  CHECK(model_input_named("programs") == Input::Programs);
  CHECK(model_input_named("pairs") == Input::Pairs);
  for (Input i : {Input::Rows, Input::Programs, Input::Pairs}) CHECK(model_input_named(model_input_name(i)) == i);
  // No name is not the default: the caller picks the target's (default_model_input).
  for (const char* other : {"", "stores", "Programs", "--model-input"}) {
    INFO(other);
    CHECK_FALSE(model_input_named(other).has_value());
  }
  CHECK(default_model_input(true) == Input::Programs);
  CHECK(default_model_input(false) == Input::Rows);
}

TEST_CASE("neural-ranker designs by name", "[costmodel][options]") {
  std::optional<MlpOptions> summary = mlp_network_named("summary");
  REQUIRE(summary.has_value());
  CHECK(summary->encoder == 0);
  CHECK(summary->hidden1 == MlpOptions{}.hidden1);
  CHECK(summary->hidden2 == MlpOptions{}.hidden2);
  CHECK(mlp_network_name(*summary) == "summary");

  std::optional<MlpOptions> deepsets = mlp_network_named("deepsets");
  REQUIRE(deepsets.has_value());
  CHECK(deepsets->encoder == 512);
  CHECK(deepsets->hidden1 == 256);
  CHECK(deepsets->hidden2 == 0);
  CHECK(deepsets->dropout == 0.2);
  CHECK(mlp_network_name(*deepsets) == "deepsets");
  // Threads and seed are not part of a design.
  deepsets->nthread = 3;
  deepsets->seed = 11;
  CHECK(mlp_network_name(*deepsets) == "deepsets");
  deepsets->hidden1 = 64;
  CHECK(mlp_network_name(*deepsets) == "custom");

  for (const char* other : {"", "mlp", "DeepSets", "--mlp-network"}) {
    INFO(other);
    CHECK_FALSE(mlp_network_named(other).has_value());
  }

  CHECK(default_mlp_weight(Input::Programs, *mlp_network_named("deepsets")) == 2.0);
  CHECK(default_mlp_weight(Input::Programs, *mlp_network_named("summary")) == 1.0);
  CHECK(default_mlp_weight(Input::Rows, *mlp_network_named("deepsets")) == 0.0);
  CHECK(default_mlp_weight(Input::Pairs, *mlp_network_named("summary")) == 0.0);
}

TEST_CASE("pack-sum cannot train a pairs model, every other objective fits every input", "[costmodel][options]") {
  for (Objective o : {Objective::Rank, Objective::PackSum})
    for (Input i : {Input::Rows, Input::Programs, Input::Pairs}) {
      INFO(objective_name(o) << " " << model_input_name(i));
      CHECK(objective_fits_input(o, i) == !(o == Objective::PackSum && i == Input::Pairs));
    }
  XGBoostModelOptions o;
  CHECK(options_in_range(o));
  o.input = Input::Pairs;
  CHECK(options_in_range(o));
  o.objective = Objective::PackSum;
  CHECK_FALSE(options_in_range(o));
  o = XGBoostModelOptions{};
  o.mlp_weight = 1;  // a neural ranker reads program summaries: rows have none
  CHECK_FALSE(options_in_range(o));
  o.input = Input::Programs;
  CHECK(options_in_range(o));
}
