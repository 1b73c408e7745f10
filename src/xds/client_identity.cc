#include "src/xds/client_identity.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace holdfast {
namespace {

constexpr absl::string_view kSpiffeScheme = "spiffe://";
// A node id is the client's text: quoted, escaped and cut in messages so
// that it cannot forge log lines or flood them.
constexpr size_t kMaxQuoted = 128;

std::string Quote(absl::string_view text) {
  std::string escaped = absl::CHexEscape(text.substr(0, kMaxQuoted));
  return absl::StrCat("\"", escaped, text.size() > kMaxQuoted ? "...\"" : "\"");
}

// SPIFFE trust domains: lowercase letters, digits, '.', '-' and '_'.
bool IsTrustDomain(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' || c == '-' || c == '_')) {
      return false;
    }
  }
  return true;
}

bool IsPathSegment(absl::string_view text) {
  if (text.empty() || text == "." || text == "..") return false;
  for (char c : text) {
    if (!(absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_')) return false;
  }
  return true;
}

IdentityCheck Accept(VerifiedIdentity verified) {
  IdentityCheck check;
  check.verified = std::move(verified);
  return check;
}

std::string OneOf(const std::vector<std::string>& values) {
  if (values.size() == 1) return Quote(values.front());
  std::vector<std::string> quoted;
  for (const std::string& value : values) quoted.push_back(Quote(value));
  return absl::StrCat("one of [", absl::StrJoin(quoted, ", "), "]");
}

}  // namespace

std::optional<SpiffeId> ParseSpiffeId(absl::string_view uri) {
  if (!absl::StartsWith(uri, kSpiffeScheme)) return std::nullopt;
  absl::string_view rest = uri.substr(kSpiffeScheme.size());
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
  if (parts.size() != 5 || !IsTrustDomain(parts[0]) || parts[1] != "ns" || parts[3] != "sa") {
    return std::nullopt;
  }
  if (!IsPathSegment(parts[2]) || !IsPathSegment(parts[4])) return std::nullopt;
  return SpiffeId{std::string(parts[0]), std::string(parts[2]), std::string(parts[4])};
}

absl::string_view IdentityRefusalLabel(IdentityRefusal reason) {
  switch (reason) {
    case IdentityRefusal::kNoCertificate:
      return "no_certificate";
    case IdentityRefusal::kNoIdentity:
      return "no_identity";
    case IdentityRefusal::kAmbiguous:
      return "ambiguous";
    case IdentityRefusal::kMismatch:
      return "mismatch";
  }
  return "mismatch";
}

absl::StatusOr<ClientIdentityPolicy> ClientIdentityPolicy::Parse(const std::string& spec) {
  ClientIdentityPolicy policy;
  policy.spec_ = spec.empty() ? "none" : spec;
  if (spec.empty() || spec == "none") {
    policy.mode_ = Mode::kNone;
  } else if (spec == "common-name") {
    policy.mode_ = Mode::kCommonName;
  } else if (spec == "san-dns") {
    policy.mode_ = Mode::kSanDns;
  } else if (spec == "san-uri") {
    policy.mode_ = Mode::kSanUri;
  } else if (spec == "spiffe") {
    policy.mode_ = Mode::kSpiffe;
  } else if (absl::StartsWith(spec, "spiffe:") && IsTrustDomain(spec.substr(7))) {
    policy.mode_ = Mode::kSpiffe;
    policy.trust_domain_ = spec.substr(7);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--xds-client-identity \"", spec,
        "\": expected none, common-name, san-dns, san-uri, spiffe or spiffe:TRUST_DOMAIN"));
  }
  return policy;
}

IdentityCheck ClientIdentityPolicy::Refuse(IdentityRefusal reason, std::string expected,
                                           absl::string_view node_id) const {
  IdentityCheck check;
  check.reason = reason;
  check.expected = std::move(expected);
  check.message = absl::StrCat("holdfast: node.id ", Quote(node_id),
                               " is not the identity of the client certificate (", check.expected,
                               "; --xds-client-identity ", spec_, ")");
  return check;
}

IdentityCheck ClientIdentityPolicy::Check(const PeerCertificate& cert,
                                          absl::string_view node_id) const {
  if (mode_ == Mode::kNone) return Accept(VerifiedIdentity{std::string(node_id), ""});
  if (!cert.present) {
    return Refuse(IdentityRefusal::kNoCertificate,
                  "the connection has no verified client "
                  "certificate",
                  node_id);
  }
  if (mode_ == Mode::kSpiffe) return CheckSpiffe(cert, node_id);
  std::vector<std::string> candidates;
  absl::string_view what;
  if (mode_ == Mode::kCommonName) {
    if (!cert.common_name.empty()) candidates.push_back(cert.common_name);
    what = "common name";
  } else {
    candidates = mode_ == Mode::kSanDns ? cert.dns_sans : cert.uri_sans;
    what = mode_ == Mode::kSanDns ? "DNS SAN" : "URI SAN";
  }
  if (candidates.empty()) {
    return Refuse(IdentityRefusal::kNoIdentity, absl::StrCat("it has no ", what), node_id);
  }
  for (const std::string& candidate : candidates) {
    // DNS names compare without case, as DNS does; other names exactly.
    const bool same =
        mode_ == Mode::kSanDns ? absl::EqualsIgnoreCase(candidate, node_id) : candidate == node_id;
    if (same) return Accept(VerifiedIdentity{candidate, ""});
  }
  return Refuse(IdentityRefusal::kMismatch, absl::StrCat("expected ", OneOf(candidates)), node_id);
}

IdentityCheck ClientIdentityPolicy::CheckSpiffe(const PeerCertificate& cert,
                                                absl::string_view node_id) const {
  std::vector<std::string> ids;
  for (const std::string& uri : cert.uri_sans) {
    if (absl::StartsWith(uri, kSpiffeScheme)) ids.push_back(uri);
  }
  if (ids.empty()) {
    return Refuse(IdentityRefusal::kNoIdentity, "it has no spiffe:// URI SAN", node_id);
  }
  // An SVID carries exactly one SPIFFE ID; two would make "who" ambiguous.
  if (ids.size() > 1) {
    return Refuse(IdentityRefusal::kAmbiguous,
                  absl::StrCat("it has ", ids.size(), " SPIFFE IDs, ", OneOf(ids)), node_id);
  }
  std::optional<SpiffeId> id = ParseSpiffeId(ids.front());
  if (!id.has_value()) {
    return Refuse(IdentityRefusal::kNoIdentity,
                  absl::StrCat("its SPIFFE ID ", Quote(ids.front()),
                               " is not spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/ACCOUNT"),
                  node_id);
  }
  if (!trust_domain_.empty() && id->trust_domain != trust_domain_) {
    return Refuse(IdentityRefusal::kNoIdentity,
                  absl::StrCat("its SPIFFE ID ", Quote(ids.front()), " is not of trust domain ",
                               trust_domain_),
                  node_id);
  }
  if (ids.front() != node_id) {
    return Refuse(IdentityRefusal::kMismatch, absl::StrCat("expected ", Quote(ids.front())),
                  node_id);
  }
  return Accept(VerifiedIdentity{ids.front(), id->ns});
}

}  // namespace holdfast
