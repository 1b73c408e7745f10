// --xds-client-identity: identities read from certificates, node ids checked
// against them, and groups taken from them.
#include "src/xds/client_identity.h"

#include "gtest/gtest.h"
#include "src/xds/node_grouper.h"

namespace holdfast {
namespace {

PeerCertificate Cert(std::string cn, std::vector<std::string> dns, std::vector<std::string> uri) {
  return PeerCertificate{.present = true,
                         .common_name = std::move(cn),
                         .dns_sans = std::move(dns),
                         .uri_sans = std::move(uri)};
}

ClientIdentityPolicy Policy(const std::string& spec) {
  absl::StatusOr<ClientIdentityPolicy> policy = ClientIdentityPolicy::Parse(spec);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

constexpr char kSpiffe[] = "spiffe://cluster.local/ns/shop/sa/gateway";

TEST(SpiffeIdTest, ParsesTheKubernetesShape) {
  std::optional<SpiffeId> id = ParseSpiffeId(kSpiffe);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->trust_domain, "cluster.local");
  EXPECT_EQ(id->ns, "shop");
  EXPECT_EQ(id->service_account, "gateway");
}

TEST(SpiffeIdTest, RefusesOtherShapes) {
  for (const char* uri :
       {"https://cluster.local/ns/shop/sa/gateway", "spiffe://cluster.local",
        "spiffe://cluster.local/ns/shop", "spiffe:///ns/shop/sa/gateway",
        "spiffe://Cluster.Local/ns/shop/sa/gateway", "spiffe://cluster.local/ns//sa/gateway",
        "spiffe://cluster.local/ns/shop/sa/gateway/extra",
        "spiffe://cluster.local/ns/shop/sa/gate?way", "spiffe://cluster.local/ns/../sa/gateway",
        "spiffe://cluster.local/sa/gateway/ns/shop"}) {
    EXPECT_FALSE(ParseSpiffeId(uri).has_value()) << uri;
  }
}

TEST(ClientIdentityPolicyTest, ParsesEveryModeAndRefusesOthers) {
  for (const char* spec :
       {"none", "", "common-name", "san-dns", "san-uri", "spiffe", "spiffe:cluster.local"}) {
    EXPECT_TRUE(ClientIdentityPolicy::Parse(spec).ok()) << spec;
  }
  for (const char* spec : {"cn", "spiffe:", "spiffe:Bad/Domain", "SAN-DNS", "metadata:x"}) {
    absl::StatusOr<ClientIdentityPolicy> policy = ClientIdentityPolicy::Parse(spec);
    ASSERT_FALSE(policy.ok()) << spec;
    EXPECT_NE(policy.status().message().find("expected none, common-name"), std::string::npos);
  }
  EXPECT_FALSE(Policy("none").enabled());
  EXPECT_TRUE(Policy("san-dns").enabled());
}

TEST(ClientIdentityPolicyTest, NoneAcceptsWhateverTheNodeClaims) {
  IdentityCheck check = Policy("none").Check(PeerCertificate{}, "anything");
  ASSERT_TRUE(check.verified.has_value());
  EXPECT_EQ(check.verified->identity, "anything");
}

TEST(ClientIdentityPolicyTest, SanDnsAcceptsANodeIdAmongTheDnsNames) {
  const PeerCertificate cert = Cert("cn", {"a.example", "Gateway-1.shop.example"}, {});
  IdentityCheck check = Policy("san-dns").Check(cert, "gateway-1.shop.example");
  ASSERT_TRUE(check.verified.has_value()) << check.message;
  // The certificate's spelling is the identity (DNS names ignore case).
  EXPECT_EQ(check.verified->identity, "Gateway-1.shop.example");
}

TEST(ClientIdentityPolicyTest, MismatchNamesTheExpectedAndTheClaimedIdentity) {
  const PeerCertificate cert = Cert("cn", {"gateway-1.shop.example"}, {});
  IdentityCheck check = Policy("san-dns").Check(cert, "gateway-2.shop.example");
  ASSERT_FALSE(check.verified.has_value());
  EXPECT_EQ(check.reason, IdentityRefusal::kMismatch);
  EXPECT_EQ(IdentityRefusalLabel(check.reason), "mismatch");
  EXPECT_NE(check.message.find("\"gateway-2.shop.example\""), std::string::npos) << check.message;
  EXPECT_NE(check.message.find("expected \"gateway-1.shop.example\""), std::string::npos)
      << check.message;
}

TEST(ClientIdentityPolicyTest, ListsEveryCandidateWhenSeveral) {
  const PeerCertificate cert = Cert("", {}, {"urn:a", "urn:b"});
  IdentityCheck check = Policy("san-uri").Check(cert, "urn:c");
  ASSERT_FALSE(check.verified.has_value());
  EXPECT_NE(check.message.find("one of [\"urn:a\", \"urn:b\"]"), std::string::npos)
      << check.message;
  EXPECT_TRUE(Policy("san-uri").Check(cert, "urn:b").verified.has_value());
  EXPECT_FALSE(Policy("san-uri").Check(cert, "URN:B").verified.has_value());  // exact
}

TEST(ClientIdentityPolicyTest, CommonName) {
  const PeerCertificate cert = Cert("proxy-7", {"proxy-8"}, {});
  EXPECT_TRUE(Policy("common-name").Check(cert, "proxy-7").verified.has_value());
  EXPECT_FALSE(Policy("common-name").Check(cert, "proxy-8").verified.has_value());
  IdentityCheck none = Policy("common-name").Check(Cert("", {"x"}, {}), "x");
  EXPECT_EQ(none.reason, IdentityRefusal::kNoIdentity);
}

TEST(ClientIdentityPolicyTest, MissingCertificateOrIdentityIsRefused) {
  IdentityCheck no_cert = Policy("san-dns").Check(PeerCertificate{}, "gateway-1");
  ASSERT_FALSE(no_cert.verified.has_value());
  EXPECT_EQ(no_cert.reason, IdentityRefusal::kNoCertificate);
  EXPECT_NE(no_cert.message.find("no verified client certificate"), std::string::npos);

  IdentityCheck no_san = Policy("san-dns").Check(Cert("gateway-1", {}, {"urn:x"}), "gateway-1");
  EXPECT_EQ(no_san.reason, IdentityRefusal::kNoIdentity);
  EXPECT_NE(no_san.message.find("no DNS SAN"), std::string::npos) << no_san.message;
}

TEST(ClientIdentityPolicyTest, SpiffeAcceptsItsIdAndGivesTheNamespace) {
  const PeerCertificate cert = Cert("x", {"x"}, {kSpiffe});
  IdentityCheck check = Policy("spiffe").Check(cert, kSpiffe);
  ASSERT_TRUE(check.verified.has_value()) << check.message;
  EXPECT_EQ(check.verified->identity, kSpiffe);
  EXPECT_EQ(check.verified->spiffe_namespace, "shop");
  EXPECT_TRUE(Policy("spiffe:cluster.local").Check(cert, kSpiffe).verified.has_value());
}

TEST(ClientIdentityPolicyTest, SpiffeRefusals) {
  const PeerCertificate cert = Cert("", {}, {"urn:other", kSpiffe});
  // Another workload's id.
  IdentityCheck other = Policy("spiffe").Check(cert, "spiffe://cluster.local/ns/pay/sa/gateway");
  EXPECT_EQ(other.reason, IdentityRefusal::kMismatch);
  EXPECT_NE(other.message.find(kSpiffe), std::string::npos);
  // Another trust domain than required.
  IdentityCheck domain = Policy("spiffe:prod.example").Check(cert, kSpiffe);
  EXPECT_EQ(domain.reason, IdentityRefusal::kNoIdentity);
  EXPECT_NE(domain.message.find("trust domain prod.example"), std::string::npos);
  // Two SPIFFE IDs: not an SVID.
  IdentityCheck two = Policy("spiffe").Check(
      Cert("", {}, {kSpiffe, "spiffe://cluster.local/ns/pay/sa/x"}), kSpiffe);
  EXPECT_EQ(two.reason, IdentityRefusal::kAmbiguous);
  // A spiffe URI of another shape.
  IdentityCheck shape =
      Policy("spiffe").Check(Cert("", {}, {"spiffe://td/workload"}), "spiffe://td/workload");
  EXPECT_EQ(shape.reason, IdentityRefusal::kNoIdentity);
  // None at all.
  EXPECT_EQ(Policy("spiffe").Check(Cert("a", {"a"}, {}), "a").reason, IdentityRefusal::kNoIdentity);
}

TEST(ClientIdentityPolicyTest, AClientsTextIsQuotedEscapedAndCutInMessages) {
  const std::string claimed = "evil\n2026-01-01 forged log line" + std::string(500, 'x');
  IdentityCheck check = Policy("san-dns").Check(Cert("", {"good"}, {}), claimed);
  EXPECT_EQ(check.message.find('\n'), std::string::npos);
  EXPECT_LT(check.message.size(), 400u);
}

envoy::config::core::v3::Node NodeClaiming(const std::string& id, const std::string& cluster) {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  node.set_cluster(cluster);
  return node;
}

TEST(IdentityGroupTest, GroupsComeFromTheCertificateNotTheClaim) {
  NodeGrouper by_identity = *NodeGrouper::Parse("identity", "default");
  NodeGrouper by_namespace = *NodeGrouper::Parse("spiffe-namespace", "default");
  const VerifiedIdentity verified{kSpiffe, "shop"};
  const auto node = NodeClaiming(kSpiffe, "pay");
  EXPECT_EQ(by_identity.GroupOf(node, &verified), kSpiffe);
  EXPECT_EQ(by_namespace.GroupOf(node, &verified), "shop");
  EXPECT_EQ(by_namespace.GroupOf(node, nullptr), "default");
  // Unchanged without identities.
  EXPECT_EQ(NodeGrouper::Parse("cluster", "default")->GroupOf(node), "pay");
}

TEST(IdentityGroupTest, FlagsThatWouldLetAClientPickItsGroupAreRefused) {
  const ClientIdentityPolicy none = Policy("none");
  const ClientIdentityPolicy dns = Policy("san-dns");
  const ClientIdentityPolicy spiffe = Policy("spiffe");
  auto check = [](const std::string& group, const ClientIdentityPolicy& identity, bool mutual) {
    return CheckGroupingTrust(*NodeGrouper::Parse(group, "default"), group, identity, mutual);
  };
  EXPECT_TRUE(check("cluster", none, false).ok());
  EXPECT_TRUE(check("identity", dns, true).ok());
  EXPECT_TRUE(check("none", dns, true).ok());
  EXPECT_TRUE(check("spiffe-namespace", spiffe, true).ok());
  EXPECT_NE(check("cluster", dns, true).message().find("what the client claims"),
            std::string::npos);
  EXPECT_FALSE(check("metadata:group", dns, true).ok());
  EXPECT_NE(check("identity", dns, false).message().find("needs mutual TLS"), std::string::npos);
  EXPECT_NE(check("identity", none, true).message().find("needs --xds-client-identity"),
            std::string::npos);
  EXPECT_FALSE(check("spiffe-namespace", dns, true).ok());
}

}  // namespace
}  // namespace holdfast
