#pragma once

#include <string>
#include <vector>

#include "yaml-cpp/yaml.h"

namespace holdfast {

// YAML::LoadAll with a guard: yaml-cpp 0.7 loops forever, allocating, on a
// stray ',' at block level (it yields empty documents without consuming the
// token). The stream's events are walked first with a bound on the number of
// documents (a real document takes at least one byte); past it the input is
// refused with a YAML::ParserException like any other syntax error.
std::vector<YAML::Node> LoadAllDocuments(const std::string& contents);

}  // namespace holdfast
