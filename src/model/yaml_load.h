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

// Appends a canonical form of `node` to `out`: each node's type, tag and
// content, every text preceded by its length, so two documents have the
// same form exactly when their content is the same (layout, comments and
// quoting style aside). A digest of it tells a changed object for a tenth
// of the cost of writing the document out again with YAML::Emitter.
// Returns false, leaving `out` partial, past `budget` nodes: an alias
// repeated inside itself can make a short file a tree of billions.
bool AppendCanonicalForm(const YAML::Node& node, size_t& budget, std::string& out);

}  // namespace holdfast
