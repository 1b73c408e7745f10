#include "src/xds/node_group.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace holdfast {

absl::StatusOr<NodeGrouper> NodeGrouper::Parse(const std::string& spec, std::string default_group) {
  NodeGrouper grouper;
  grouper.default_group_ = std::move(default_group);
  if (spec == "none" || spec.empty()) {
    grouper.source_ = Source::kNone;
  } else if (spec == "cluster") {
    grouper.source_ = Source::kCluster;
  } else if (absl::StartsWith(spec, "metadata:") && spec.size() > 9) {
    grouper.source_ = Source::kMetadata;
    grouper.metadata_key_ = spec.substr(9);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "node group \"", spec, "\": expected none, cluster or metadata:KEY"));
  }
  return grouper;
}

std::string NodeGrouper::GroupOf(const envoy::config::core::v3::Node& node) const {
  switch (source_) {
    case Source::kNone:
      return default_group_;
    case Source::kCluster:
      return node.cluster().empty() ? default_group_ : node.cluster();
    case Source::kMetadata: {
      auto it = node.metadata().fields().find(metadata_key_);
      if (it == node.metadata().fields().end() || !it->second.has_string_value() ||
          it->second.string_value().empty()) {
        return default_group_;
      }
      return it->second.string_value();
    }
  }
  return default_group_;
}

}  // namespace holdfast
