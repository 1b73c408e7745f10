#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "envoy/config/core/v3/base.pb.h"

namespace holdfast {

// Decides which snapshot group a proxy belongs to, from its Node.
class NodeGrouper {
 public:
  // `spec` is "none" (every node in the default group), "cluster" (the
  // node's cluster) or "metadata:KEY" (a string in the node's metadata).
  static absl::StatusOr<NodeGrouper> Parse(const std::string& spec, std::string default_group);

  // The node's group; the default group when the node does not say.
  std::string GroupOf(const envoy::config::core::v3::Node& node) const;

 private:
  enum class Source { kNone, kCluster, kMetadata };
  Source source_ = Source::kNone;
  std::string metadata_key_;
  std::string default_group_;
};

}  // namespace holdfast
