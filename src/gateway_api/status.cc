#include "src/gateway_api/status.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/common/clock.h"
#include "src/gateway_api/synthesized_names.h"
#include "src/kube/json_fields.h"

namespace holdfast::gateway_api {
namespace {

using nlohmann::json;

bool Synthesized(const ObjectKey& key) { return absl::StartsWith(key.name, kPrefix); }

// Conditions that say something is wrong: for Conflicted and
// PartiallyInvalid, True; for the others, False.
bool Bad(const Condition& c) {
  return (c.type == "Conflicted" || c.type == "PartiallyInvalid") ? c.status : !c.status;
}

std::string Describe(const Condition& c) {
  return absl::StrCat(c.type, "=", c.status ? "True" : "False", " (", c.reason, "): ", c.message);
}

void SetProgrammed(GatewayApiStatus& status, const StatusMap& translated,
                   const std::vector<const ObjectKey*>& made) {
  Condition programmed{"Programmed", true, "Programmed", "served by holdfast"};
  const Condition* accepted = FindCondition(status.conditions, "Accepted");
  if (accepted != nullptr && !accepted->status) {
    programmed = {"Programmed", false, "Invalid", "the Gateway is not accepted"};
  } else if (made.empty()) {
    programmed = {"Programmed", false, "Invalid", "no listener is served"};
  }
  for (const ObjectKey* key : made) {
    auto it = translated.find(*key);
    if (it != translated.end() && it->second.state != StatusState::kRejected) continue;
    // Not translated at all: it did not decode (the Gateway's problems say why).
    const std::string why = it == translated.end()       ? key->name + " could not be built"
                            : it->second.reasons.empty() ? "rejected"
                                                         : it->second.reasons[0].message;
    programmed = {"Programmed", false, "Invalid", why};
    for (ListenerStatus& listener : status.listeners) {
      SetCondition(listener.conditions, {"Programmed", false, "Invalid", why});
    }
  }
  SetCondition(status.conditions, programmed);
}

json ConditionsJson(const std::vector<Condition>& conditions, const json& current,
                    int64_t generation, const std::string& now) {
  json out = json::array();
  for (const Condition& c : conditions) {
    const std::string value = c.status ? "True" : "False";
    std::string since = now;
    if (current.is_array()) {
      for (const json& old : current) {
        if (JsonString(old, "type") == c.type && JsonString(old, "status") == value &&
            !JsonString(old, "lastTransitionTime").empty()) {
          since = JsonString(old, "lastTransitionTime");
        }
      }
    }
    out.push_back({{"type", c.type},
                   {"status", value},
                   {"reason", c.reason},
                   {"message", c.message.substr(0, 32768)},
                   {"observedGeneration", generation},
                   {"lastTransitionTime", since}});
  }
  return out;
}

const json& NamedEntry(const json& list, const std::string& field, const json& value) {
  static const json kNull;
  if (!list.is_array()) return kNull;
  for (const json& entry : list) {
    if (JsonField(entry, field) == value) return entry;
  }
  return kNull;
}

json ListenersJson(const GatewayApiStatus& status, const json& current, const std::string& now) {
  json out = json::array();
  for (const ListenerStatus& l : status.listeners) {
    json kinds = json::array();
    for (const GroupKind& k : l.supported_kinds)
      kinds.push_back({{"group", k.group}, {"kind", k.kind}});
    const json& old = NamedEntry(JsonField(current, "listeners"), "name", l.name);
    out.push_back({{"name", l.name},
                   {"supportedKinds", kinds},
                   {"attachedRoutes", l.attached_routes},
                   {"conditions", ConditionsJson(l.conditions, JsonField(old, "conditions"),
                                                 status.generation, now)}});
  }
  return out;
}

json ParentsJson(const GatewayApiStatus& status, const json& current, const std::string& now) {
  json out = json::array();
  const json& parents = JsonField(current, "parents");
  if (parents.is_array()) {
    for (const json& entry : parents) {
      if (JsonString(entry, "controllerName") != kControllerName) out.push_back(entry);
    }
  }
  for (const RouteParentStatus& p : status.parents) {
    const json* old = nullptr;
    if (parents.is_array()) {
      for (const json& entry : parents) {
        if (JsonString(entry, "controllerName") == kControllerName &&
            JsonField(entry, "parentRef") == p.parent_ref) {
          old = &entry;
        }
      }
    }
    out.push_back(
        {{"parentRef", p.parent_ref},
         {"controllerName", kControllerName},
         {"conditions", ConditionsJson(p.conditions, old ? JsonField(*old, "conditions") : json(),
                                       status.generation, now)}});
  }
  return out;
}

// The conditions of an object, its listeners' and its parents', flattened.
std::vector<Condition> AllConditions(const GatewayApiStatus& status) {
  std::vector<Condition> all = status.conditions;
  for (const ListenerStatus& l : status.listeners) {
    for (Condition c : l.conditions) {
      c.message = absl::StrCat("listener ", l.name, ": ", c.message);
      all.push_back(std::move(c));
    }
  }
  for (const RouteParentStatus& p : status.parents) {
    for (Condition c : p.conditions) {
      c.message = absl::StrCat("parent ", JsonString(p.parent_ref, "name"), ": ", c.message);
      all.push_back(std::move(c));
    }
  }
  return all;
}

ObjectStatus DebugStatus(const GatewayApiStatus& status) {
  ObjectStatus out;
  out.key = status.key;
  std::string short_kind = status.key.kind.substr(0, status.key.kind.find('.'));
  out.location = {absl::StrCat("kubernetes:", short_kind, "/", status.key.ns, "/", status.key.name),
                  0};
  for (const FieldError& problem : status.problems) out.Warn(problem.path, problem.message);
  bool accepted_somewhere = status.parents.empty();
  for (const RouteParentStatus& p : status.parents) {
    const Condition* c = FindCondition(p.conditions, "Accepted");
    accepted_somewhere |= c != nullptr && c->status;
  }
  for (const Condition& c : AllConditions(status)) {
    if (!Bad(c)) continue;
    const bool fatal = c.type == "Accepted" && (status.parents.empty() || !accepted_somewhere);
    if (fatal) {
      out.Reject("status.conditions", Describe(c));
    } else {
      out.Warn("status.conditions", Describe(c));
    }
  }
  return out;
}

}  // namespace

GatewayApiStatuses SettleStatuses(GatewayApiStatuses statuses,
                                  const MadeFrom& made_from,
                                  const StatusMap& translated) {
  std::vector<ObjectKey> gateways;
  for (const auto& [key, status] : statuses) {
    if (key.kind == kGatewayKind) gateways.push_back(key);
  }
  for (const ObjectKey& key : gateways) {
    GatewayApiStatus& status = statuses.Mutable(key);
    std::vector<const ObjectKey*> made;
    for (const auto& [synthesized, sources] : made_from) {
      if (synthesized.kind != kind::kGateway) continue;
      for (const ObjectKey& source : sources) {
        if (source == key) made.push_back(&synthesized);
      }
    }
    SetProgrammed(status, translated, made);
  }
  return statuses;
}

StatusMap DebugStatuses(const GatewayApiStatuses& statuses, const Conversion& conversion,
                        StatusMap translated) {
  StatusMap out;
  for (const auto& [key, status] : statuses) out[key] = DebugStatus(*status);
  for (auto& [key, status] : translated) {
    if (!Synthesized(key)) {
      out[key] = std::move(status);
      continue;
    }
    auto sources = conversion.made_from.find(key);
    if (sources == conversion.made_from.end()) continue;
    for (const FieldError& reason : status.reasons) {
      if (absl::StrContains(reason.message, kInvalidBackend)) continue;  // ResolvedRefs says it
      for (const ObjectKey& source : sources->second) {
        ObjectStatus& target = out[source];
        const std::string message = absl::StrCat(key.ToString(), ": ", reason.message);
        if (status.state == StatusState::kRejected) {
          target.Reject(reason.path, message);
        } else {
          target.Warn(reason.path, message);
        }
      }
    }
  }
  return out;
}

json GatewayApiStatusJson(const GatewayApiStatus& status, const json& current, absl::Time now) {
  const std::string at = FormatKubeTime(now);
  json out = current.is_object() ? current : json::object();
  if (status.key.kind == kHttpRouteKind || status.key.kind == kGrpcRouteKind) {
    out["parents"] = ParentsJson(status, current, at);
    return out;
  }
  out["conditions"] =
      ConditionsJson(status.conditions, JsonField(current, "conditions"), status.generation, at);
  if (status.key.kind == kGatewayKind) out["listeners"] = ListenersJson(status, current, at);
  return out;
}

}  // namespace holdfast::gateway_api
