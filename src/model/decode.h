#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/model/field_errors.h"
#include "src/model/types.h"

namespace holdfast {

// One document of a config file, decoded as far as possible.
struct DecodedObject {
  // Set when the document names its kind, namespace and name, so a status
  // can be attached to it even if the rest is invalid.
  std::optional<ObjectKey> key;
  SourceLocation location;
  // Set only when there are no errors.
  std::optional<GatewayObject> object;
  FieldErrors errors;
};

struct DecodedFile {
  std::vector<DecodedObject> objects;
  // Set when the file is not valid YAML: nothing in it can be trusted.
  std::optional<FieldError> syntax_error;
};

// Decodes gateway objects (apiVersion holdfast.dev/v1; kinds Gateway,
// VirtualService, RouteTable, Upstream, Secret) from YAML text, one object per
// document. Every field is checked for shape and range (regexes compile,
// ports are ports, exactly one route action, ...); unknown fields are errors.
// `file` is used in locations only.
DecodedFile DecodeObjects(const std::string& contents, const std::string& file);

// Decodes one object a program built in memory as JSON (the Gateway API
// conversion), with the same checks and results as DecodeObjects on its
// text, but without writing and parsing text: its locations have no line.
// Every string must be UTF-8 (DecodeObjects refuses other text).
// `content_digest` stands for the object's content (the caller's canonical
// text of it, digested); DecodeObjects digests the document written out
// again instead.
DecodedObject DecodeJson(const nlohmann::json& document, const std::string& file,
                         const std::string& content_digest);

}  // namespace holdfast
