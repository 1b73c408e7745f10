#include "src/model/decode.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

constexpr char kHeader[] = "apiVersion: holdfast.dev/v1\nmetadata: {name: x, namespace: ns}\n";

struct DecodeCase {
  std::string label;
  std::string yaml;  // appended to kHeader
  // Expected errors as "line: path: message-substring"; empty: valid.
  std::vector<std::string> errors;
};

TEST(DecodeTest, FieldPathsAndLines) {
  std::vector<DecodeCase> cases = {
      {"valid upstream", "kind: Upstream\nspec:\n  hosts: [{address: 10.0.0.1, port: 80}]\n", {}},
      {"port range",
       "kind: Upstream\nspec:\n  hosts:\n  - {address: 10.0.0.1, port: 0}\n",
       {"6: spec.hosts[0].port: must be between 1 and 65535"}},
      {"missing hosts", "kind: Upstream\nspec: {connectTimeout: 1s}\n", {"spec.hosts: required"}},
      {"service by port", "kind: Upstream\nspec:\n  service: {name: web, port: 8080}\n", {}},
      {"service by port name",
       "kind: Upstream\nspec:\n  service: {name: web, portName: grpc}\n",
       {}},
      {"hosts and service",
       "kind: Upstream\nspec:\n  hosts: [{address: a, port: 1}]\n  service: {name: web, port: "
       "1}\n",
       {"6: spec.service: set only one of hosts and service"}},
      {"service port and port name",
       "kind: Upstream\nspec:\n  service: {name: web, port: 80, portName: http}\n",
       {"spec.service: set exactly one of port and portName"}},
      {"service without port",
       "kind: Upstream\nspec:\n  service: {name: web}\n",
       {"spec.service: set exactly one of port and portName"}},
      {"service port range",
       "kind: Upstream\nspec:\n  service: {name: web, port: 70000}\n",
       {"spec.service.port: must be between 1 and 65535"}},
      {"service name",
       "kind: Upstream\nspec:\n  service: {name: Web.x, port: 80}\n",
       {"spec.service.name: must be a Service name"}},
      {"service namespace is the upstream's",
       "kind: Upstream\nspec:\n  service: {name: web, namespace: other, port: 80}\n",
       {"spec.service.namespace: unknown field"}},
      {"bad duration",
       "kind: Upstream\nspec:\n  hosts: [{address: a, port: 1}]\n  connectTimeout: soon\n",
       {"6: spec.connectTimeout: expected a duration"}},
      {"bad lb",
       "kind: Upstream\nspec:\n  hosts: [{address: a, port: 1}]\n  loadBalancing: Magic\n",
       {"spec.loadBalancing: must be one of"}},
      {"unknown field",
       "kind: Upstream\nspec:\n  hosts: [{address: a, port: 1}]\n  colour: red\n",
       {"6: spec.colour: unknown field"}},
      {"bad regex",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - match: {regex: \"(\"}\n    "
       "upstream: u\n",
       {"7: spec.routes[0].match.regex: invalid regex"}},
      {"two actions",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstream: u\n    "
       "directResponse: {status: 200}\n",
       {"spec.routes[0]: a route has exactly one action"}},
      {"no action",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - match: {prefix: /}\n",
       {"spec.routes[0]: a route needs one action"}},
      {"header match needs one kind",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - match: {headers: [{name: h, "
       "exact: a, prefix: b}]}\n    upstream: u\n",
       {"spec.routes[0].match.headers[0]: set only one of"}},
      {"redirect code",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - redirect: {code: 200}\n",
       {"spec.routes[0].redirect.code: must be one of 301"}},
      {"weights all zero",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstreams: [{name: a, weight: "
       "0}]\n",
       {"spec.routes[0].upstreams: weights must not all be zero"}},
      {"no domains", "kind: VirtualService\nspec:\n  routes: []\n", {"spec.domains: must list"}},
      {"gateway tls",
       "kind: Gateway\nspec:\n  port: 80\n  virtualServices: [{name: a}]\n  tls: {certFile: c}\n",
       {"spec.tls: set both certFile and keyFile"}},
      {"gateway tls without a certificate",
       "kind: Gateway\nspec:\n  port: 443\n  virtualServices: [{name: a}]\n  tls: {}\n",
       {"spec.tls: set either certFile and keyFile, or secretRef"}},
      {"gateway sni only",
       "kind: Gateway\nspec:\n  port: 443\n  virtualServices: [{name: a}]\n  tls:\n    "
       "certificates:\n    - {serverNames: [a.example.com, \"*.b.example.com\"], secretRef: {name: "
       "s}}\n",
       {}},
      {"gateway sni without names",
       "kind: Gateway\nspec:\n  port: 443\n  virtualServices: [{name: a}]\n  tls:\n    "
       "certificates:\n    - {serverNames: [], secretRef: {name: s}}\n",
       {"spec.tls.certificates[0].serverNames: must list at least one name"}},
      {"gateway sni name",
       "kind: Gateway\nspec:\n  port: 443\n  virtualServices: [{name: a}]\n  tls:\n    "
       "certificates:\n    - {serverNames: [Shop.example.com], secretRef: {name: s}}\n",
       {"spec.tls.certificates[0].serverNames[0]: \"Shop.example.com\" 'S' is not allowed"}},
      {"gateway sni name twice",
       "kind: Gateway\nspec:\n  port: 443\n  virtualServices: [{name: a}]\n  tls:\n    "
       "certificates:\n    - {serverNames: [a.example.com], secretRef: {name: s}}\n    - "
       "{serverNames: [a.example.com], certFile: c, keyFile: k}\n",
       {"spec.tls.certificates[1].serverNames[0]: \"a.example.com\" is listed twice"}},
      {"gateway sni without certificate",
       "kind: Gateway\nspec:\n  port: 443\n  virtualServices: [{name: a}]\n  tls:\n    "
       "certificates:\n    - {serverNames: [a.example.com]}\n",
       {"spec.tls.certificates[0]: set either certFile and keyFile, or secretRef"}},
      {"unknown kind", "kind: Frobnicator\nspec: {}\n", {"kind: must be one of"}},
      {"path must start with slash",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - match: {prefix: api}\n    "
       "upstream: u\n",
       {"spec.routes[0].match: path must start with /"}},
      // Names that would make two resources share a name, or that Envoy
      // refuses, are refused here with their field.
      {"domain with a slash",
       "kind: VirtualService\nspec:\n  domains: [ok.example.com, gateway/shop/public]\n  routes: "
       "[]\n",
       {"spec.domains[1]: \"gateway/shop/public\": '/' is not allowed"}},
      {"domain wildcards and ports",
       "kind: VirtualService\nspec:\n  domains: [\"*\", \"*.a.com\", \"api.*\", \"a.com:8080\", "
       "A_b-1.com]\n  routes: []\n",
       {}},
      {"domain with a bad port",
       "kind: VirtualService\nspec:\n  domains: [\"a.com:0\"]\n  routes: []\n",
       {"spec.domains[0]: \"a.com:0\": a port after ':' must be 1-65535"}},
      {"domain with NUL",
       "kind: VirtualService\nspec:\n  domains: [\"a\\0b\"]\n  routes: []\n",
       {"spec.domains[0]: must be one line without control characters (found 0x00"}},
      {"header name with CRLF",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - match: {headers: [{name: "
       "\"x\\r\\ny\", exact: a}]}\n    upstream: u\n",
       {"spec.routes[0].match.headers[0].name: must be one line without control characters (found "
        "0x0d"}},
      {"header name not a token",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - match: {headers: [{name: \"x "
       "y\", exact: a}]}\n    upstream: u\n",
       {"spec.routes[0].match.headers[0].name: \"x y\" is not a header name"}},
      {"header value with LF",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstream: u\n    options: "
       "{requestHeaders: {set: {x-a: \"1\\n2\"}}}\n",
       {"spec.routes[0].options.requestHeaders.set.x-a: must be one line"}},
      {"header edit names",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstream: u\n    options: "
       "{responseHeaders: {remove: [\"bad header\"]}}\n",
       {"spec.routes[0].options.responseHeaders.remove[0]: \"bad header\" is not a header name"}},
      {"pseudo-header match",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - match: {headers: [{name: "
       "\":authority\", exact: a}]}\n    upstream: u\n",
       {}},
      {"mirror share in two ways",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstream: u\n    options: "
       "{mirrors: [{upstream: m, percent: 5, fraction: {numerator: 1}}]}\n",
       {"spec.routes[0].options.mirrors[0]: set only one of percent and fraction"}},
      {"mirror fraction above one",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstream: u\n    options: "
       "{mirrors: [{upstream: m, fraction: {numerator: 3, denominator: 2}}]}\n",
       {"spec.routes[0].options.mirrors[0].fraction: numerator must not exceed denominator"}},
      {"mirror without upstream",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstream: u\n    options: "
       "{mirrors: [{percent: 5}]}\n",
       {"spec.routes[0].options.mirrors[0].upstream: "}},
      {"mirror percent",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - upstream: u\n    options: "
       "{mirrors: [{upstream: m, percent: 101}]}\n",
       {"spec.routes[0].options.mirrors[0].percent: must be between 0 and 100"}},
      {"redirect port",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - redirect: {port: 0}\n",
       {"spec.routes[0].redirect.port: must be between 1 and 65535"}},
      {"multi-line body",
       "kind: VirtualService\nspec:\n  domains: [a]\n  routes:\n  - directResponse: {status: 200, "
       "body: \"line 1\\nline 2\\n\"}\n",
       {}},
      {"rollout policy", "kind: RolloutPolicy\nspec:\n  nodeGroup: edge\n  canaries: {percent: 5}\n",
       {}},
      {"rollout policy for every group",
       "kind: RolloutPolicy\nspec:\n  canaries:\n    nodeMetadata: {key: canary, value: \"yes\"}\n"
       "  bake: 10m\n  ackTimeout: 1m\n",
       {}},
      {"rollout policy without canaries (a group opted out)",
       "kind: RolloutPolicy\nspec: {nodeGroup: internal}\n", {}},
      {"rollout percent",
       "kind: RolloutPolicy\nspec:\n  canaries: {percent: 101}\n",
       {"5: spec.canaries.percent: must be between 0 and 100"}},
      {"rollout metadata without value",
       "kind: RolloutPolicy\nspec:\n  canaries:\n    nodeMetadata: {key: canary}\n",
       {"spec.canaries.nodeMetadata.value: required"}},
      {"rollout empty group", "kind: RolloutPolicy\nspec: {nodeGroup: \"\"}\n",
       {"spec.nodeGroup: must not be empty"}},
      {"rollout bake", "kind: RolloutPolicy\nspec: {bake: later}\n",
       {"spec.bake: expected a duration"}},
      {"rollout ack timeout", "kind: RolloutPolicy\nspec: {ackTimeout: 0s}\n",
       {"spec.ackTimeout: must be more than 0s"}},
      {"rollout unknown field", "kind: RolloutPolicy\nspec:\n  canaries: {share: 5}\n",
       {"spec.canaries.share: unknown field"}},
  };
  for (const DecodeCase& c : cases) {
    DecodedFile file = DecodeObjects(std::string(kHeader) + c.yaml, "f.yaml");
    ASSERT_FALSE(file.syntax_error.has_value()) << c.label;
    ASSERT_EQ(file.objects.size(), 1u) << c.label;
    const DecodedObject& object = file.objects[0];
    ASSERT_TRUE(object.key.has_value()) << c.label;
    EXPECT_EQ(object.key->name, "x") << c.label;
    if (c.errors.empty()) {
      EXPECT_TRUE(object.errors.empty()) << c.label << ": " << object.errors.ToString();
      EXPECT_TRUE(object.object.has_value()) << c.label;
      continue;
    }
    EXPECT_FALSE(object.object.has_value()) << c.label;
    for (const std::string& expected : c.errors) {
      bool found = false;
      for (const FieldError& e : object.errors.errors()) {
        std::string rendered = absl::StrCat(e.location.line, ": ", e.path, ": ", e.message);
        found |= rendered.find(expected) != std::string::npos;
      }
      EXPECT_TRUE(found) << c.label << ": expected \"" << expected << "\" in\n"
                         << object.errors.ToString();
    }
  }
}

TEST(DecodeTest, NamespacesAreDnsLabels) {
  for (const std::string ns : {"holdfast", "a-1", "x"}) {
    DecodedFile file = DecodeObjects(
        absl::StrCat("apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {name: u, namespace: ",
                     ns, "}\nspec:\n  hosts: [{address: a, port: 1}]\n"),
        "f.yaml");
    EXPECT_TRUE(file.objects[0].object.has_value()) << ns << file.objects[0].errors.ToString();
  }
  for (const std::string ns :
       std::vector<std::string>{"a/b", "Shop", "-a", "a.b", std::string(64, 'a')}) {
    DecodedFile file = DecodeObjects(
        absl::StrCat(
            "apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {name: u, namespace: \"", ns,
            "\"}\nspec:\n  hosts: [{address: a, port: 1}]\n"),
        "f.yaml");
    ASSERT_EQ(file.objects.size(), 1u);
    EXPECT_TRUE(absl::StrContains(file.objects[0].errors.ToString(), "metadata.namespace: must be"))
        << ns << ": " << file.objects[0].errors.ToString();
  }
}

// `kubectl get -o yaml` output validates as it is: what the API server set
// is passed over, and a misspelt metadata field is still refused.
TEST(DecodeTest, ManifestsReadBackFromAClusterDecode) {
  constexpr char kReadBack[] =
      "apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata:\n  name: u\n  namespace: shop\n"
      "  uid: 0b6c-42\n  resourceVersion: \"42\"\n  generation: 3\n"
      "  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  managedFields: [{manager: kubectl}]\n"
      "  finalizers: [a/b]\nspec:\n  hosts: [{address: a, port: 1}]\n"
      "status: {state: Accepted, writer: {replica: r, term: 2}}\n";
  DecodedFile file = DecodeObjects(kReadBack, "f.yaml");
  ASSERT_EQ(file.objects.size(), 1u);
  EXPECT_TRUE(file.objects[0].object.has_value()) << file.objects[0].errors.ToString();

  file = DecodeObjects(
      "apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {name: u, resourceVersoin: \"1\"}\n"
      "spec:\n  hosts: [{address: a, port: 1}]\n",
      "f.yaml");
  EXPECT_EQ(file.objects[0].errors.ToString(), "f.yaml:3: metadata.resourceVersoin: unknown field");
}

TEST(DecodeTest, NulBytesAreNamedAsSuch) {
  DecodedFile file = DecodeObjects(std::string("kind: Upstream\nx: a\0b\n", 20), "f.yaml");
  ASSERT_TRUE(file.syntax_error.has_value());
  EXPECT_EQ(file.syntax_error->message, "contains a NUL byte (byte 19)");
  EXPECT_EQ(file.syntax_error->location.line, 2);
}

TEST(DecodeTest, DeepNestingIsNamedAsSuch) {
  DecodedFile file = DecodeObjects(
      "kind: Upstream\nspec: " + std::string(100'000, '[') + std::string(100'000, ']') + "\n",
      "f.yaml");
  ASSERT_TRUE(file.syntax_error.has_value());
  EXPECT_TRUE(absl::StrContains(file.syntax_error->message, "levels deep"))
      << file.syntax_error->message;
  EXPECT_EQ(file.syntax_error->location.line, 2);
}

TEST(DecodeTest, EveryErrorIsCollected) {
  DecodedFile file = DecodeObjects(
      "apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {name: Bad_Name}\n"
      "spec:\n  hosts: [{address: a, port: 0}, {port: 1}]\n  connectTimeout: x\n",
      "f.yaml");
  ASSERT_EQ(file.objects.size(), 1u);
  EXPECT_EQ(file.objects[0].errors.errors().size(), 4u) << file.objects[0].errors.ToString();
}

TEST(DecodeTest, SyntaxErrorNamesTheLine) {
  DecodedFile file = DecodeObjects("a: 1\nb: [\n", "f.yaml");
  ASSERT_TRUE(file.syntax_error.has_value());
  EXPECT_EQ(file.syntax_error->location.file, "f.yaml");
  EXPECT_GT(file.syntax_error->location.line, 0);
}

TEST(DecodeTest, TextThatIsNotUtf8IsRefusedWithItsLine) {
  struct Case {
    std::string bytes;
    bool valid;
  };
  const std::vector<Case> cases = {
      {"d\xc3\xa9j\xc3\xa0 vu \xe2\x82\xac \xf0\x9f\x99\x82", true},
      {"\xff", false},              // never in UTF-8
      {"\xc3", false},              // cut short at the end
      {"\xc3(", false},             // continuation missing
      {"\xc0\xaf", false},          // overlong '/'
      {"\xed\xa0\x80", false},      // a surrogate
      {"\xf4\x90\x80\x80", false},  // beyond U+10FFFF
  };
  for (const Case& c : cases) {
    DecodedFile file = DecodeObjects("kind: Upstream\n# " + c.bytes + "\n", "f.yaml");
    bool refused = file.syntax_error && absl::StrContains(file.syntax_error->message, "UTF-8");
    EXPECT_EQ(refused, !c.valid) << absl::CHexEscape(c.bytes);
    if (refused) EXPECT_EQ(file.syntax_error->location.line, 2);
  }
}

}  // namespace
}  // namespace holdfast

namespace holdfast {
namespace {

TEST(GatewayObjectTest, KeyLessOrdersAsKeys) {
  std::vector<GatewayObject> objects;
  const std::vector<SharedSpec> specs = {UpstreamSpec{}, VirtualServiceSpec{}, RouteTableSpec{},
                                         GatewaySpec{}, SecretSpec{}};
  for (const SharedSpec& spec : specs) {
    for (const char* ns : {"a", "shop", "shop-long-namespace-name"}) {
      for (const char* name : {"x", "web", "a-name-longer-than-fifteen"}) {
        GatewayObject o;
        o.spec = spec;
        o.meta.ns = ns;
        o.meta.name = name;
        objects.push_back(o);
      }
    }
  }
  for (const GatewayObject& a : objects) {
    for (const GatewayObject& b : objects) {
      EXPECT_EQ(KeyLess(a, b), a.key() < b.key())
          << a.key().ToString() << " vs " << b.key().ToString();
    }
  }
  EXPECT_EQ(objects[0].kind(), kind::kUpstream);
  EXPECT_EQ(objects.back().kind(), kind::kSecret);
}

}  // namespace
}  // namespace holdfast

namespace holdfast {
namespace {

std::string DigestOf(const std::string& yaml) {
  DecodedFile file = DecodeObjects(yaml, "digest.yaml");
  EXPECT_FALSE(file.syntax_error.has_value()) << yaml;
  EXPECT_EQ(file.objects.size(), 1u) << yaml;
  if (file.objects.size() != 1 || !file.objects[0].object) return "";
  return file.objects[0].object->content_digest;
}

// The content digest tells changed objects: layout and comments do not
// count, every value, key, order and quoting does.
TEST(ContentDigestTest, ChangesWithContentNotWithLayout) {
  auto upstream = [](const std::string& hosts) {
    return std::string(kHeader) + "kind: Upstream\nspec:\n  hosts: " + hosts + "\n";
  };
  const std::string digest = DigestOf(upstream("[{address: 10.0.0.1, port: 80}]"));
  ASSERT_FALSE(digest.empty());
  EXPECT_EQ(DigestOf(std::string(kHeader) +
                     "# backends\nkind:   Upstream\nspec:\n  hosts:\n  - address: 10.0.0.1  # a\n"
                     "    port: 80\n"),
            digest);
  for (const std::string& changed : {
           upstream("[{address: 10.0.0.2, port: 80}]"),
           upstream("[{address: 10.0.0.1, port: 81}]"),
           upstream("[{port: 80, address: 10.0.0.1}]"),
           upstream("[{address: \"10.0.0.1\", port: 80}]"),
           upstream("[{address: 10.0.0.1, port: 80}, {address: 10.0.0.1, port: 80}]"),
       }) {
    EXPECT_NE(DigestOf(changed), digest) << changed;
  }
}

// Aliases can make a short document a tree of billions of nodes, and
// `status` is ignored, not refused, so a tree there is digested: from the
// document written out with its aliases, never by walking the tree.
TEST(ContentDigestTest, AnAliasBombIsDigestedWithoutWalkingItsTree) {
  auto bomb = [](const std::string& leaf) {
    std::string yaml = std::string(kHeader) + "kind: Upstream\nstatus:\n  x0: &a0 [" + leaf + "]\n";
    for (int i = 1; i < 30; ++i) {
      yaml += "  x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
      for (int j = 0; j < 8; ++j) yaml += (j ? ", *a" : "*a") + std::to_string(i - 1);
      yaml += "]\n";
    }
    return yaml + "spec:\n  hosts: [{address: 10.0.0.1, port: 80}]\n";
  };
  const std::string digest = DigestOf(bomb("1"));  // 8^29 leaves: never walked
  EXPECT_FALSE(digest.empty());
  EXPECT_NE(DigestOf(bomb("2")), digest);
}

}  // namespace
}  // namespace holdfast
