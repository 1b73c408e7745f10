#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "envoy/config/core/v3/base.pb.h"
#include "src/xds/client_identity.h"

namespace holdfast {

// Decides which snapshot group a proxy belongs to, from its Node.
class NodeGrouper {
 public:
  // `spec` is "none" (every node in the default group), "cluster" (the
  // node's cluster), "metadata:KEY" (a string in the node's metadata),
  // "identity" (the identity its client certificate proved) or
  // "spiffe-namespace" (the namespace of its certificate's SPIFFE ID).
  static absl::StatusOr<NodeGrouper> Parse(const std::string& spec, std::string default_group);

  // The node's group; the default group when the node (or its identity)
  // does not say. `verified` is the stream's checked identity, nullptr
  // when identities are not checked.
  std::string GroupOf(const envoy::config::core::v3::Node& node,
                      const VerifiedIdentity* verified = nullptr) const;

  // Whether the group is read from what the client claims (its node's
  // cluster or metadata) rather than from its certificate.
  bool claimed_by_client() const {
    return source_ == Source::kCluster || source_ == Source::kMetadata;
  }
  // Whether the group needs a verified identity (identity, spiffe-namespace).
  bool needs_identity() const {
    return source_ == Source::kIdentity || source_ == Source::kSpiffeNamespace;
  }
  bool needs_spiffe() const { return source_ == Source::kSpiffeNamespace; }

 private:
  enum class Source { kNone, kCluster, kMetadata, kIdentity, kSpiffeNamespace };
  Source source_ = Source::kNone;
  std::string metadata_key_;
  std::string default_group_;
};

// Checks that --node-group and --xds-client-identity fit together: with
// identities checked, the group must come from the certificate (a client
// must not pick another group's configuration by what it claims), groups of
// identities need identities, and identities need mutual TLS.
absl::Status CheckGroupingTrust(const NodeGrouper& grouper, const std::string& group_spec,
                                const ClientIdentityPolicy& identity, bool mutual_tls);

}  // namespace holdfast
