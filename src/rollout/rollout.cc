#include "src/rollout/rollout.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace holdfast {

bool IsCanary(const RolloutPolicy& policy, const envoy::config::core::v3::Node& node) {
  if (!policy.metadata_key.empty()) {
    const auto& fields = node.metadata().fields();
    auto it = fields.find(policy.metadata_key);
    if (it != fields.end() && it->second.has_string_value() &&
        it->second.string_value() == policy.metadata_value) {
      return true;
    }
  }
  if (policy.canary_percent <= 0) return false;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : node.id()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return static_cast<int>(hash % 100) < policy.canary_percent;
}

void Rollout::Offer(SnapshotPtr snapshot, absl::Time now) {
  if (snapshot == nullptr) return;
  if (stable_ == nullptr || !policy_.enabled()) {  // nothing to protect, or no canaries
    if (stable_ != nullptr && snapshot->version() == stable_->version()) return;
    reason_ = stable_ == nullptr ? "first snapshot" : "no canaries: every proxy gets it at once";
    stable_ = std::move(snapshot);
    since_ = now;
    return;
  }
  const SnapshotPtr& current = candidate_ != nullptr ? candidate_ : stable_;
  if (snapshot->version() == current->version()) return;  // the same content
  if (snapshot->version() == stable_->version()) {
    // Back to what everyone has: nothing to roll out.
    candidate_ = nullptr;
    stage_ = Stage::kIdle;
    held_type_.clear();
    since_ = now;
    reason_ = "the stable snapshot was offered again";
    return;
  }
  reason_ = stage_ == Stage::kBaking ? absl::StrCat("superseded ", candidate_->version()) : "";
  candidate_ = std::move(snapshot);
  stage_ = Stage::kBaking;
  held_type_.clear();
  since_ = now;
}

std::optional<RolloutDecision> Rollout::Judge(const CanaryReport& report, absl::Time now) const {
  if (stage_ != Stage::kBaking) return std::nullopt;
  RolloutDecision decision{.candidate = candidate_->version()};
  const absl::Duration baked = now - since_;
  if (report.nacked > 0) {
    decision.action = RolloutDecision::Action::kHold;
    decision.reason =
        absl::StrFormat("%d of %d canaries rejected %s (%s: %s)", report.nacked, report.canaries,
                        candidate_->version(), report.nacking_node, report.error);
    if (!report.nacked_type.empty()) {
      absl::StrAppend(&decision.reason, "; ", DescribeChanges(report.nacked_type));
    }
    decision.rejected_type = report.nacked_type;
  } else if (report.acked < report.canaries && baked >= policy_.ack_timeout) {
    decision.action = RolloutDecision::Action::kHold;
    decision.reason = absl::StrFormat(
        "%d of %d canaries did not ACK %s within %s", report.canaries - report.acked,
        report.canaries, candidate_->version(), absl::FormatDuration(policy_.ack_timeout));
  } else if (report.acked == report.canaries && baked >= policy_.bake) {
    decision.action = RolloutDecision::Action::kPromote;
    decision.reason = report.canaries == 0
                          ? "no canary connected; promoted after the bake time"
                          : absl::StrFormat("%d canaries ACKed and none NACKed for %s",
                                            report.canaries, absl::FormatDuration(policy_.bake));
  } else {
    return std::nullopt;
  }
  return decision;
}

std::vector<std::string> ChangedResources(const Snapshot& stable, const Snapshot& candidate,
                                          absl::string_view type_url, size_t limit) {
  std::vector<std::string> changed;
  const ResourceMap& before = stable.Resources(type_url);
  for (const auto& [name, resource] : candidate.Resources(type_url)) {
    if (changed.size() >= limit) break;
    auto it = before.find(name);
    if (it == before.end() || it->second->version() != resource->version()) changed.push_back(name);
  }
  return changed;
}

std::string Rollout::DescribeChanges(absl::string_view type_url) const {
  constexpr size_t kNamed = 5;
  std::vector<std::string> changed = ChangedResources(*stable_, *candidate_, type_url, kNamed + 1);
  const bool more = changed.size() > kNamed;
  if (more) changed.pop_back();
  absl::string_view type = TypeNameOf(type_url);
  type = type.substr(type.rfind('.') + 1);  // "Cluster"
  return absl::StrCat("changed ", type, ": ",
                      changed.empty() ? "none (only removals)" : absl::StrJoin(changed, ", "),
                      more ? ", ..." : "");
}

bool Rollout::Apply(const RolloutDecision& decision, absl::Time now) {
  if (candidate_ == nullptr || decision.candidate != candidate_->version()) return false;
  std::string reason =
      decision.replica.empty()
          ? decision.reason
          : absl::StrCat(decision.reason, " (decided by replica ", decision.replica, ")");
  if (decision.action == RolloutDecision::Action::kHold) {
    if (stage_ != Stage::kBaking) return false;
    Hold(std::move(reason), decision.rejected_type, now);
  } else {
    PromoteCandidate(std::move(reason), now);
  }
  return true;
}

void Rollout::Observe(const CanaryReport& report, absl::Time now) {
  if (std::optional<RolloutDecision> decision = Judge(report, now)) Apply(*decision, now);
}

bool Rollout::Promote(absl::Time now) {
  if (candidate_ == nullptr) return false;
  return Apply({.candidate = candidate_->version(),
                .action = RolloutDecision::Action::kPromote,
                .reason = "promoted by the operator"},
               now);
}

bool Rollout::Abort(absl::Time now) {
  if (stage_ != Stage::kBaking) return false;
  return Apply({.candidate = candidate_->version(),
                .action = RolloutDecision::Action::kHold,
                .reason = "aborted by the operator"},
               now);
}

void Rollout::PromoteCandidate(std::string how, absl::Time now) {
  stable_ = std::move(candidate_);
  candidate_ = nullptr;
  stage_ = Stage::kIdle;
  held_type_.clear();
  since_ = now;
  reason_ = std::move(how);
}

void Rollout::Hold(std::string why, std::string type_url, absl::Time now) {
  stage_ = Stage::kHeld;
  since_ = now;
  reason_ = std::move(why);
  held_type_ = std::move(type_url);
}

absl::string_view RolloutActionName(RolloutDecision::Action action) {
  return action == RolloutDecision::Action::kHold ? "hold" : "promote";
}

absl::string_view RolloutStageName(Rollout::Stage stage) {
  switch (stage) {
    case Rollout::Stage::kIdle:
      return "idle";
    case Rollout::Stage::kBaking:
      return "baking";
    case Rollout::Stage::kHeld:
      return "held";
  }
  return "?";
}

}  // namespace holdfast
