// cc-wrap --print as text for a person (--format text, the default on a
// terminal): a rendering of the plan's JSON (wrap-plan.schema.json), which
// stays the contract.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace cc::sandbox {

std::string plan_text(const nlohmann::json& plan);

}  // namespace cc::sandbox
