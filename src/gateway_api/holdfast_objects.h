#pragma once
// Decodes holdfast objects written by the conversion (JSON in the format of
// docs/configuration.md) with the decoder files go through, so that they
// are checked exactly as a user's objects are, and names them.

#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "src/model/field_errors.h"
#include "src/model/types.h"

namespace holdfast::gateway_api {

// Decodes `spec` as an object of `kind` in `ns`, then names it `name` (a
// synthesized name the decoder would refuse: that is what keeps it apart
// from users' objects). Errors go to `errors`, paths as the decoder's.
std::optional<GatewayObject> DecodeHoldfastObject(const std::string& kind, const std::string& ns,
                                                  const std::string& name,
                                                  const nlohmann::json& spec, FieldErrors* errors);

}  // namespace holdfast::gateway_api
