#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace holdfast {

// A JSON file of Envoy resources, read with the lines that rejections name:
// the document's, and, when it is a map with a "resources" entry, that
// entry's value's and each of its elements'.
struct JsonResourceDocument {
  nlohmann::json root;
  int root_line = 0;                 // 1-based, like every line here
  int resources_line = 0;            // 0: no "resources" entry
  std::vector<int> resource_lines;   // one per element of a "resources" list
};

// Reads `text` as one JSON object, typed as the YAML reader would type it
// (integers beyond 64 bits keep their digits as a string), nested at most
// `max_depth` levels. nullopt for anything else, and where yaml-cpp would
// read the same text otherwise: not JSON, another kind of value, a NUL byte
// (nlohmann's lexer stops there), a carriage return without a line feed
// after it, too deep, a number that is not finite, a key of the document
// given twice (yaml-cpp's lookup finds the first, its iteration the last).
// The caller then reads the text as YAML, which covers JSON, so whatever
// this reader turns down gets the YAML reader's result and messages.
//
// Why a second reader: yaml-cpp reads each file twice (a guard pass, then
// the nodes) and slowly; endpoint files rewritten every 100 ms made it the
// largest cost of endpoint churn.
std::optional<JsonResourceDocument> ReadJsonResourceDocument(std::string_view text,
                                                             int max_depth);

}  // namespace holdfast
