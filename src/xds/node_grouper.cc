#include "src/xds/node_grouper.h"

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
  } else if (spec == "identity") {
    grouper.source_ = Source::kIdentity;
  } else if (spec == "spiffe-namespace") {
    grouper.source_ = Source::kSpiffeNamespace;
  } else if (absl::StartsWith(spec, "metadata:") && spec.size() > 9) {
    grouper.source_ = Source::kMetadata;
    grouper.metadata_key_ = spec.substr(9);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("node group \"", spec,
                     "\": expected none, cluster, metadata:KEY, identity or spiffe-namespace"));
  }
  return grouper;
}

std::string NodeGrouper::GroupOf(const envoy::config::core::v3::Node& node,
                                 const VerifiedIdentity* verified) const {
  switch (source_) {
    case Source::kIdentity:
      return verified == nullptr || verified->identity.empty() ? default_group_
                                                               : verified->identity;
    case Source::kSpiffeNamespace:
      return verified == nullptr || verified->spiffe_namespace.empty() ? default_group_
                                                                       : verified->spiffe_namespace;
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

absl::Status CheckGroupingTrust(const NodeGrouper& grouper, const std::string& group_spec,
                                const ClientIdentityPolicy& identity, bool mutual_tls) {
  if (identity.enabled() && !mutual_tls) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--xds-client-identity ", identity.spec(),
        " needs mutual TLS on the xDS port (--tls-cert, --tls-key and --tls-client-ca)"));
  }
  if (identity.enabled() && grouper.claimed_by_client()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-group ", group_spec,
                     " takes the group from what the client claims; with "
                     "--xds-client-identity use --node-group identity, spiffe-namespace or none"));
  }
  if (grouper.needs_identity() && !identity.enabled()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-group ", group_spec, " needs --xds-client-identity"));
  }
  if (grouper.needs_spiffe() && !identity.spiffe()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-group ", group_spec, " needs --xds-client-identity spiffe"));
  }
  return absl::OkStatus();
}

}  // namespace holdfast
