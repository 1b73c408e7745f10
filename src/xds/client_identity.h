#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/xds/peer_certificate.h"

namespace holdfast {

// A SPIFFE ID of the Kubernetes shape Istio and SPIRE issue:
// spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT.
struct SpiffeId {
  std::string trust_domain;
  std::string ns;
  std::string service_account;
};

// Parses `uri` as such a SPIFFE ID; nullopt for anything else (another
// scheme, another path shape, empty segments, a query or fragment).
std::optional<SpiffeId> ParseSpiffeId(absl::string_view uri);

// The identity a certificate proved and the node id it was matched with.
struct VerifiedIdentity {
  std::string identity;          // equal to the node id
  std::string spiffe_namespace;  // set in spiffe mode
};

// Why a stream was refused. The label set is closed (IdentityRefusalLabel),
// so refusals cannot grow /metrics.
enum class IdentityRefusal { kNoCertificate, kNoIdentity, kAmbiguous, kMismatch };
absl::string_view IdentityRefusalLabel(IdentityRefusal reason);

// The outcome of checking one stream's node against its certificate.
struct IdentityCheck {
  std::optional<VerifiedIdentity> verified;  // set when accepted
  IdentityRefusal reason = IdentityRefusal::kMismatch;
  std::string expected;  // what the certificate allows, for the message
  std::string message;   // for the client (PERMISSION_DENIED) and the log
};

// Binds a proxy's node id to its verified client certificate
// (--xds-client-identity). Contract: with mode `none` every node is
// accepted as it claims (holdfast's behaviour without the flag); otherwise
// a node is accepted only when its node.id equals the identity the
// certificate carries in the configured place, and that identity (not
// node.cluster or metadata) is what grouping may use. Stateless and
// thread-safe.
class ClientIdentityPolicy {
 public:
  // `spec`: none | common-name | san-dns | san-uri | spiffe[:TRUST_DOMAIN].
  static absl::StatusOr<ClientIdentityPolicy> Parse(const std::string& spec);

  bool enabled() const { return mode_ != Mode::kNone; }
  bool spiffe() const { return mode_ == Mode::kSpiffe; }
  const std::string& spec() const { return spec_; }

  IdentityCheck Check(const PeerCertificate& cert, absl::string_view node_id) const;

 private:
  enum class Mode { kNone, kCommonName, kSanDns, kSanUri, kSpiffe };
  IdentityCheck CheckSpiffe(const PeerCertificate& cert, absl::string_view node_id) const;
  IdentityCheck Refuse(IdentityRefusal reason, std::string expected,
                       absl::string_view node_id) const;

  Mode mode_ = Mode::kNone;
  std::string trust_domain_;  // spiffe: required trust domain, if given
  std::string spec_ = "none";
};

}  // namespace holdfast
