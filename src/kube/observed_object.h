#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "nlohmann/json.hpp"
#include "src/kube/json_fields.h"
#include "src/model/object.h"

namespace holdfast {

// Which version of a Kubernetes object a translation read: its uid (an
// object deleted and created again under the same name has another) and its
// metadata.generation (what status.observedGeneration reports).
struct ObservedObject {
  std::string uid;
  int64_t generation = 0;
  bool operator==(const ObservedObject&) const = default;
};
using ObservedObjects = std::map<ObjectKey, ObservedObject>;

// The uid and generation of an API object ("" and 0 where absent).
inline ObservedObject ObserveObject(const nlohmann::json& object) {
  const nlohmann::json& meta = JsonField(object, "metadata");
  const nlohmann::json& generation = JsonField(meta, "generation");
  return {.uid = JsonString(meta, "uid"),
          .generation = generation.is_number_integer() ? generation.get<int64_t>() : 0};
}

}  // namespace holdfast
