#include "src/rollout/rollout_ledger.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/common/log.h"

namespace holdfast {
namespace {

// Concurrent writers retry from a fresh read; more conflicts than this in
// a row mean something else keeps writing the document.
constexpr int kAttempts = 8;

nlohmann::json ToJson(const RolloutDecision& decision) {
  return {{"candidate", decision.candidate},
          {"action", RolloutActionName(decision.action)},
          {"reason", decision.reason},
          {"rejected_type", decision.rejected_type},
          {"group", decision.group},
          {"replica", decision.replica},
          {"at", decision.at}};
}

absl::StatusOr<RolloutDecision> FromJson(const nlohmann::json& entry, size_t index) {
  const std::string where = absl::StrCat("decisions[", index, "]");
  if (!entry.is_object()) return absl::DataLossError(where + ": not an object");
  RolloutDecision decision;
  for (auto [field, out] :
       {std::pair{"candidate", &decision.candidate}, std::pair{"reason", &decision.reason},
        std::pair{"replica", &decision.replica}, std::pair{"at", &decision.at}}) {
    auto it = entry.find(field);
    if (it == entry.end() || !it->is_string()) {
      return absl::DataLossError(absl::StrCat(where, ".", field, ": missing or not a string"));
    }
    *out = it->get<std::string>();
  }
  // Absent in what earlier replicas wrote.
  for (auto [field, out] :
       {std::pair{"rejected_type", &decision.rejected_type}, std::pair{"group", &decision.group}}) {
    auto it = entry.find(field);
    if (it == entry.end()) continue;
    if (!it->is_string()) {
      return absl::DataLossError(absl::StrCat(where, ".", field, ": not a string"));
    }
    *out = it->get<std::string>();
  }
  const std::string action =
      entry.value("action", nlohmann::json()).is_string() ? entry["action"].get<std::string>() : "";
  if (action == "hold") {
    decision.action = RolloutDecision::Action::kHold;
  } else if (action == "promote") {
    decision.action = RolloutDecision::Action::kPromote;
  } else {
    return absl::DataLossError(where + ".action: must be \"hold\" or \"promote\"");
  }
  return decision;
}

absl::StatusOr<std::vector<RolloutDecision>> Parse(const std::string& text) {
  std::vector<RolloutDecision> decisions;
  if (text.empty()) return decisions;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::DataLossError("not JSON");
  auto list = doc.is_object() ? doc.find("decisions") : doc.end();
  if (list == doc.end() || !list->is_array()) {
    return absl::DataLossError("decisions: missing or not a list");
  }
  for (size_t i = 0; i < list->size(); ++i) {
    absl::StatusOr<RolloutDecision> decision = FromJson((*list)[i], i);
    if (!decision.ok()) return decision.status();
    decisions.push_back(*std::move(decision));
  }
  return decisions;
}

std::string Serialize(const std::vector<RolloutDecision>& decisions) {
  nlohmann::json list = nlohmann::json::array();
  for (const RolloutDecision& decision : decisions) list.push_back(ToJson(decision));
  return nlohmann::json{{"decisions", list}}.dump();
}

const RolloutDecision* FindIn(const std::vector<RolloutDecision>& decisions,
                              absl::string_view candidate, absl::string_view group) {
  for (auto it = decisions.rbegin(); it != decisions.rend(); ++it) {
    if (it->candidate == candidate && it->group == group) return &*it;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<RolloutDecision> RolloutLedger::Record(const RolloutDecision& decision,
                                                      bool overrule) {
  absl::Status last = absl::OkStatus();
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    absl::StatusOr<DocumentVersion> read = document_->Read();
    if (!read.ok()) return read.status();
    absl::StatusOr<std::vector<RolloutDecision>> decisions = Parse(read->text);
    if (!decisions.ok()) {
      LogWarning("rollout: replacing the unreadable decisions in %s: %s", Describe(),
                 decisions.status().message());
      decisions.emplace();
    }
    if (const RolloutDecision* standing = FindIn(*decisions, decision.candidate, decision.group);
        standing != nullptr && !overrule) {
      return *standing;
    }
    std::erase_if(*decisions, [&](const RolloutDecision& d) {
      return d.candidate == decision.candidate && d.group == decision.group;
    });
    decisions->push_back(decision);
    if (decisions->size() > kKept) decisions->erase(decisions->begin());
    absl::StatusOr<std::string> written = document_->Replace(Serialize(*decisions), read->revision);
    if (written.ok()) return decision;
    if (!absl::IsAborted(written.status())) return written.status();
    last = written.status();
  }
  return absl::AbortedError(absl::StrCat(Describe(), ": ", kAttempts,
                                         " conflicting writes in a row; last: ", last.message()));
}

absl::StatusOr<std::optional<RolloutDecision>> RolloutLedger::Find(absl::string_view candidate,
                                                                   absl::string_view group) {
  absl::StatusOr<DocumentVersion> read = document_->Read();
  if (!read.ok()) return read.status();
  absl::StatusOr<std::vector<RolloutDecision>> decisions = Parse(read->text);
  if (!decisions.ok()) {
    return absl::DataLossError(
        absl::StrCat(Describe(), ": unreadable decisions: ", decisions.status().message()));
  }
  const RolloutDecision* found = FindIn(*decisions, candidate, group);
  if (found == nullptr) return std::nullopt;
  return *found;
}

}  // namespace holdfast
