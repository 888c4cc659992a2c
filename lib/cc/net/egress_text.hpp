// cc-egress's --check lines and --dry-run plan as text for a person
// (--format text, the default on a terminal). The JSON stays the contract;
// this is a rendering of it, nothing more.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace cc::net {

// One line: the decision, the target, the reason and, in brackets, the rule
// ("allow  api.github.com:443  allowed  [allow *.github.com (github.txt:5)]").
std::string check_text(const nlohmann::json& line);

// The plan: the network rule, then each rule list with its entries
// (the always-deny and non-public lists as counts with their first entries).
std::string plan_text(const nlohmann::json& plan);

}  // namespace cc::net
