// The Gateway API conversion and its statuses as pure functions: objects in,
// holdfast objects and Gateway API conditions out, then translated.
#include <array>
#include <random>

#include "absl/strings/match.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gtest/gtest.h"
#include "src/gateway_api/attachment.h"
#include "src/gateway_api/convert.h"
#include "src/gateway_api/status.h"
#include "src/translate/translator.h"
#include "test/kube_unit/gateway_api_fixtures.h"

namespace holdfast::gateway_api {
namespace {

using namespace testing;  // NOLINT: the fixtures

class GatewayApiConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    input_.classes.push_back(ParseGatewayClass(ClassJson("holdfast")));
    input_.classes.push_back(ParseGatewayClass(ClassJson("other", "example.com/other")));
    AddGateway(GatewayJson("infra", "gw", {HttpListener("http", 8080, "*.example.com")}));
    AddService(input_, "shop", "web", 80);
    AddService(input_, "shop", "api", 9000);
  }
  void AddGateway(const json& object) { input_.gateways.push_back(ParseGateway(object)); }
  void AddHttpRoute(const json& object) { input_.routes.push_back(Parsed(object, false)); }
  void AddGrpcRoute(const json& object) { input_.routes.push_back(Parsed(object, true)); }
  static std::shared_ptr<const Route> Parsed(const json& object, bool grpc) {
    return std::make_shared<const Route>(ParseRoute(object, grpc));
  }

  // Converts, translates, and settles the statuses.
  void Run() {
    conversion_ = ConvertGatewayApi(input_);
    TranslationInput translation;
    for (const GatewayObject& o : conversion_.objects) translation.objects[o.key()] = o;
    translation.services = input_.services;
    output_ = translator_.Translate(translation);
    statuses_ = SettleStatuses(conversion_.statuses, conversion_.made_from, output_.statuses);
    debug_ = DebugStatuses(statuses_, conversion_, output_.statuses);
  }
  const GatewayObject* Object(const std::string& kind, const std::string& ns,
                              const std::string& name) {
    for (const GatewayObject& o : conversion_.objects) {
      if (o.key() == ObjectKey{kind, ns, name}) return &o;
    }
    return nullptr;
  }
  bool HasResource(const std::string& type, const std::string& name) {
    for (const ResourcePtr& r : output_.resources) {
      if (absl::EndsWith(r->type_url(), type) && r->name() == name) return true;
    }
    return false;
  }
  std::string ResourceText(const std::string& type, const std::string& name) {
    for (const ResourcePtr& r : output_.resources) {
      if (absl::EndsWith(r->type_url(), type) && r->name() == name && r->message() != nullptr) {
        return r->message()->ShortDebugString();
      }
    }
    return "";
  }
  const GatewayApiStatus& Status(const std::string& kind, const std::string& ns,
                                 const std::string& name) {
    return statuses_.at(ObjectKey{kind, ns, name});
  }
  // The condition `type` of the route's first parent.
  Condition RouteCondition(const std::string& name, const std::string& type,
                           const std::string& kind = kHttpRouteKind) {
    const GatewayApiStatus& status = Status(kind, "shop", name);
    EXPECT_FALSE(status.parents.empty());
    if (status.parents.empty()) return {};
    const Condition* c = FindCondition(status.parents[0].conditions, type);
    return c == nullptr ? Condition{type, false, "absent", ""} : *c;
  }

  GatewayApiInput input_;
  Conversion conversion_;
  Translator translator_;
  TranslationOutput output_;
  GatewayApiStatuses statuses_;
  StatusMap debug_;
};

TEST_F(GatewayApiConvertTest, HttpRouteBecomesGatewayVirtualServiceAndUpstreams) {
  json rule = PrefixRule("/shop/", {Backend("web", 80, 3), Backend("api", 9000, 1)});
  rule["matches"][0]["headers"] = {{{"name", "x-user"}, {"value", "a"}}};
  rule["matches"][0]["method"] = "GET";
  rule["filters"] = {
      {{"type", "RequestHeaderModifier"},
       {"requestHeaderModifier", {{"set", {{{"name", "x-via"}, {"value", "gw"}}}}}}}};
  rule["filters"].push_back(
      {{"type", "CORS"},
       {"cors",
        {{"allowOrigins", {"https://shop.example.com", "https://*.example.org"}},
         {"allowMethods", {"GET"}},
         {"maxAge", 60}}}});
  rule["timeouts"] = {{"request", "10s"}, {"backendRequest", "2s"}};
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "store", {"shop.example.com"}, {rule},
                         {{{"name", "gw"}, {"namespace", "infra"}}}));
  input_.grants.push_back(ParseReferenceGrant(GrantJson("shop", "Gateway", "infra", "Secret")));
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  Run();

  ASSERT_NE(Object(kind::kGateway, "infra", "gateway-api:gw:8080"), nullptr);
  const GatewayObject* vs =
      Object(kind::kVirtualService, "infra", "gateway-api:gw:8080:shop.example.com");
  ASSERT_NE(vs, nullptr);
  const auto& spec = std::get<VirtualServiceSpec>(*vs->spec);
  EXPECT_EQ(spec.domains, (std::vector<std::string>{"shop.example.com", "shop.example.com:8080"}));
  ASSERT_EQ(spec.routes.size(), 1u);
  EXPECT_EQ(spec.routes[0].match.path.value, "/shop");
  EXPECT_EQ(spec.routes[0].match.methods, std::vector<std::string>{"GET"});
  EXPECT_EQ(spec.routes[0].options.timeout, absl::Seconds(10));
  ASSERT_TRUE(spec.routes[0].options.retries.has_value());
  EXPECT_EQ(spec.routes[0].options.retries->per_try_timeout, absl::Seconds(2));
  ASSERT_TRUE(spec.routes[0].options.cors.has_value());
  const CorsPolicy& cors = *spec.routes[0].options.cors;
  ASSERT_EQ(cors.allow_origins.size(), 2u);
  EXPECT_EQ(cors.allow_origins[0].value, "https://shop.example.com");
  EXPECT_EQ(cors.allow_origins[1].kind, StringMatch::Kind::kRegex);
  EXPECT_EQ(cors.allow_origins[1].value, "https\\:\\/\\/[^/]+\\.example\\.org");
  EXPECT_EQ(cors.max_age, absl::Seconds(60));
  ASSERT_NE(Object(kind::kUpstream, "shop", "gateway-api:web:80"), nullptr);

  EXPECT_TRUE(HasResource("Listener", "gateway/infra/gateway-api:gw:8080"));
  EXPECT_TRUE(HasResource("Listener", "shop.example.com")) << "a gRPC API listener per host";
  std::string routes = ResourceText("RouteConfiguration", "gateway/infra/gateway-api:gw:8080");
  EXPECT_TRUE(absl::StrContains(routes, "shop/gateway-api:web:80")) << routes;
  EXPECT_TRUE(absl::StrContains(routes, "x-via")) << routes;
  EXPECT_TRUE(HasResource("Cluster", "shop/gateway-api:web:80"));

  EXPECT_TRUE(
      FindCondition(Status(kGatewayClassKind, "", "holdfast").conditions, "Accepted")->status);
  EXPECT_FALSE(statuses_.contains(ObjectKey{kGatewayClassKind, "", "other"}));
  const GatewayApiStatus& gateway = Status(kGatewayKind, "infra", "gw");
  EXPECT_TRUE(FindCondition(gateway.conditions, "Accepted")->status);
  EXPECT_TRUE(FindCondition(gateway.conditions, "Programmed")->status);
  EXPECT_EQ(FindCondition(conversion_.statuses.at(gateway.key).conditions, "Programmed"), nullptr)
      << "settling copies the conversion's statuses, never changes them";
  ASSERT_EQ(gateway.listeners.size(), 1u);
  EXPECT_EQ(gateway.listeners[0].attached_routes, 1);
  EXPECT_EQ(RouteCondition("store", "Accepted").reason, "Accepted");
  EXPECT_EQ(RouteCondition("store", "ResolvedRefs").reason, "ResolvedRefs");
  EXPECT_EQ(debug_.at(ObjectKey{kHttpRouteKind, "shop", "store"}).state, StatusState::kAccepted);
  for (const auto& [key, status] : debug_) {
    EXPECT_FALSE(absl::StartsWith(key.name, "gateway-api:")) << key.ToString();
  }
}

TEST_F(GatewayApiConvertTest, FiltersBecomeRedirectsAndRewrites) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  json redirect = PrefixRule("/old", json::array());
  redirect["filters"] = {
      {{"type", "RequestRedirect"},
       {"requestRedirect",
        {{"scheme", "https"},
         {"hostname", "new.example.com"},
         {"statusCode", 301},
         {"path", {{"type", "ReplacePrefixMatch"}, {"replacePrefixMatch", "/new"}}}}}}};
  json rewrite = PrefixRule("/api", {Backend("api", 9000)});
  rewrite["filters"] = {
      {{"type", "URLRewrite"},
       {"urlRewrite",
        {{"hostname", "internal"},
         {"path", {{"type", "ReplacePrefixMatch"}, {"replacePrefixMatch", "/v2"}}}}}},
      {{"type", "ResponseHeaderModifier"}, {"responseHeaderModifier", {{"remove", {"server"}}}}}};
  json full = PrefixRule("/full", {Backend("api", 9000)});
  full["filters"] = {
      {{"type", "URLRewrite"},
       {"urlRewrite", {{"path", {{"type", "ReplaceFullPath"}, {"replaceFullPath", "/x"}}}}}}};
  AddHttpRoute(
      RouteJson("HTTPRoute", "shop", "store", {"shop.example.com"}, {redirect, rewrite, full}));
  Run();
  const GatewayObject* vs =
      Object(kind::kVirtualService, "infra", "gateway-api:gw:8080:shop.example.com");
  ASSERT_NE(vs, nullptr);
  const auto& routes = std::get<VirtualServiceSpec>(*vs->spec).routes;
  ASSERT_EQ(routes.size(), 2u) << "ReplaceFullPath on a prefix match is dropped";
  const Redirect& r = std::get<Redirect>(routes[0].action);  // same length: rule order
  EXPECT_TRUE(r.https);
  EXPECT_EQ(r.host, "new.example.com");
  EXPECT_EQ(r.code, 301u);
  EXPECT_EQ(r.prefix_rewrite, "/new");
  EXPECT_EQ(routes[1].options.host_rewrite, "internal");
  EXPECT_EQ(routes[1].options.prefix_rewrite, "/v2");
  EXPECT_EQ(routes[1].options.response_headers.remove, std::vector<std::string>{"server"});
  EXPECT_EQ(RouteCondition("store", "PartiallyInvalid").message,
            "spec.rules[2].filters[0].urlRewrite.path: ReplaceFullPath on a match other than an "
            "Exact path is not supported by holdfast; the rule is not served");
}

TEST_F(GatewayApiConvertTest, GatewaysOfOtherClassesAreIgnored) {
  json other = GatewayJson("infra", "theirs", {HttpListener("http", 9090)});
  other["spec"]["gatewayClassName"] = "other";
  AddGateway(other);
  AddHttpRoute(RouteJson("HTTPRoute", "infra", "r", nullptr,
                         {PrefixRule("/", {Backend("web", 80)})}, {{{"name", "theirs"}}}));
  Run();
  EXPECT_FALSE(statuses_.contains(ObjectKey{kGatewayKind, "infra", "theirs"}));
  EXPECT_FALSE(statuses_.contains(ObjectKey{kHttpRouteKind, "infra", "r"}));
  EXPECT_EQ(Object(kind::kGateway, "infra", "gateway-api:theirs:9090"), nullptr);
}

TEST_F(GatewayApiConvertTest, AllowedRoutesSameNamespaceRefusesOthers) {
  AddHttpRoute(
      RouteJson("HTTPRoute", "shop", "store", nullptr, {PrefixRule("/", {Backend("web", 80)})}));
  Run();
  Condition accepted = RouteCondition("store", "Accepted");
  EXPECT_FALSE(accepted.status);
  EXPECT_EQ(accepted.reason, "NotAllowedByListeners");
  EXPECT_EQ(Status(kGatewayKind, "infra", "gw").listeners[0].attached_routes, 0);
  EXPECT_EQ(debug_.at(ObjectKey{kHttpRouteKind, "shop", "store"}).state, StatusState::kRejected);
}

TEST_F(GatewayApiConvertTest, AllowedRoutesSelectorAndKinds) {
  Listener& listener = input_.gateways[0].listeners[0];
  listener.from = Listener::From::kSelector;
  listener.selector.match_labels = {{"gateway", "yes"}};
  input_.namespace_labels["shop"] = {{"gateway", "yes"}};
  input_.namespace_labels["other"] = {{"gateway", "no"}};
  AddHttpRoute(
      RouteJson("HTTPRoute", "shop", "store", nullptr, {PrefixRule("/", {Backend("web", 80)})}));
  json elsewhere = RouteJson("HTTPRoute", "other", "x", nullptr, {PrefixRule("/", json::array())});
  AddHttpRoute(elsewhere);
  Run();
  EXPECT_TRUE(RouteCondition("store", "Accepted").status);
  EXPECT_EQ(Status(kHttpRouteKind, "other", "x").parents[0].conditions[0].reason,
            "NotAllowedByListeners");

  listener.kinds = {{kGroup, "GRPCRoute"}};
  Run();
  EXPECT_EQ(RouteCondition("store", "Accepted").reason, "NotAllowedByListeners");
}

TEST_F(GatewayApiConvertTest, HostnamesAreIntersectedWithTheListener) {
  EXPECT_EQ(IntersectHostnames("*.example.com", {"a.example.com", "example.com", "a.other.org"}),
            std::vector<std::string>{"a.example.com"});
  EXPECT_EQ(IntersectHostnames("a.example.com", {"*.example.com"}),
            std::vector<std::string>{"a.example.com"});
  EXPECT_EQ(IntersectHostnames("", {}), std::vector<std::string>{"*"});
  EXPECT_EQ(IntersectHostnames("a.example.com", {}), std::vector<std::string>{"a.example.com"});
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "store", {"www.other.org"},
                         {PrefixRule("/", {Backend("web", 80)})}));
  Run();
  EXPECT_EQ(RouteCondition("store", "Accepted").reason, "NoMatchingListenerHostname");
}

TEST_F(GatewayApiConvertTest, SectionNameAndPortSelectListeners) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "a", nullptr, {PrefixRule("/", {Backend("web", 80)})},
                         {{{"name", "gw"}, {"namespace", "infra"}, {"sectionName", "nope"}}}));
  AddHttpRoute(RouteJson(
      "HTTPRoute", "shop", "b", nullptr, {PrefixRule("/", {Backend("web", 80)})},
      {{{"name", "gw"}, {"namespace", "infra"}, {"sectionName", "http"}, {"port", 8080}}}));
  Run();
  EXPECT_EQ(RouteCondition("a", "Accepted").reason, "NoMatchingParent");
  EXPECT_EQ(RouteCondition("b", "Accepted").reason, "Accepted");
  EXPECT_EQ(Status(kHttpRouteKind, "shop", "a").parents[0].parent_ref["sectionName"], "nope");
}

TEST_F(GatewayApiConvertTest, CrossNamespaceBackendNeedsAReferenceGrant) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  AddService(input_, "payments", "pay", 443);
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "store", nullptr,
                         {PrefixRule("/pay", {Backend("pay", 443, 1, "payments")}),
                          PrefixRule("/", {Backend("web", 80)})}));
  Run();
  Condition refs = RouteCondition("store", "ResolvedRefs");
  EXPECT_FALSE(refs.status);
  EXPECT_EQ(refs.reason, "RefNotPermitted");
  EXPECT_TRUE(RouteCondition("store", "Accepted").status) << "the other rules keep serving";
  EXPECT_EQ(Object(kind::kUpstream, "payments", "gateway-api:pay:443"), nullptr);
  const ObjectStatus& debug = debug_.at(ObjectKey{kHttpRouteKind, "shop", "store"});
  EXPECT_EQ(debug.state, StatusState::kWarning);
  EXPECT_EQ(debug.reasons[0].path, "spec.rules[0].backendRefs[0].namespace");
  EXPECT_EQ(debug.location.file, "kubernetes:HTTPRoute/shop/store");

  input_.grants.push_back(
      ParseReferenceGrant(GrantJson("payments", "HTTPRoute", "shop", "Service")));
  Run();
  EXPECT_TRUE(RouteCondition("store", "ResolvedRefs").status);
  EXPECT_NE(Object(kind::kUpstream, "payments", "gateway-api:pay:443"), nullptr);
}

TEST_F(GatewayApiConvertTest, MissingOrInvalidBackends) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  AddHttpRoute(
      RouteJson("HTTPRoute", "shop", "gone", nullptr, {PrefixRule("/", {Backend("nothere", 80)})}));
  json bucket = Backend("bucket", 80);
  bucket["group"] = "storage.example.com";
  bucket["kind"] = "Bucket";
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "kind", nullptr, {PrefixRule("/", {bucket})}));
  AddHttpRoute(
      RouteJson("HTTPRoute", "shop", "port", nullptr, {PrefixRule("/", {Backend("web", 81)})}));
  Run();
  EXPECT_EQ(RouteCondition("gone", "ResolvedRefs").reason, "BackendNotFound");
  EXPECT_EQ(RouteCondition("kind", "ResolvedRefs").reason, "InvalidKind");
  EXPECT_EQ(RouteCondition("port", "ResolvedRefs").reason, "BackendNotFound");
  EXPECT_EQ(debug_.at(ObjectKey{kHttpRouteKind, "shop", "port"}).reasons[0].path,
            "spec.rules[0].backendRefs[0].port");
}

TEST_F(GatewayApiConvertTest, BadRulesAreDroppedAndNamedWhileOthersServe) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  json bad_regex = {{"matches", {{{"path", {{"type", "RegularExpression"}, {"value", "/(x"}}}}}},
                    {"backendRefs", {Backend("web", 80)}}};
  json mirror = PrefixRule("/m", {Backend("web", 80)});
  mirror["filters"] = {
      {{"type", "RequestMirror"}, {"requestMirror", {{"backendRef", Backend("api", 9000)}}}}};
  json retry = PrefixRule("/r", {Backend("web", 80)});
  retry["retry"] = {{"attempts", 2}};
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "store", {"shop.example.com"},
                         {PrefixRule("/", {Backend("web", 80)}), bad_regex, mirror, retry}));
  json broken = RouteJson("HTTPRoute", "shop", "broken", nullptr, json::array());
  broken["spec"]["hostnames"] = "not-a-list";
  AddHttpRoute(broken);
  Run();
  Condition partially = RouteCondition("store", "PartiallyInvalid");
  EXPECT_TRUE(partially.status);
  EXPECT_EQ(partially.reason, "UnsupportedValue");
  EXPECT_TRUE(absl::StrContains(partially.message, "spec.rules[1]")) << partially.message;
  EXPECT_TRUE(RouteCondition("store", "Accepted").status);
  const auto& problems = Status(kHttpRouteKind, "shop", "store").problems;
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].path, "spec.rules[1]");
  EXPECT_TRUE(absl::StrContains(problems[0].message, "regex")) << problems[0].message;
  EXPECT_EQ(problems[1].path, "spec.rules[3].retry");
  const GatewayObject* vs =
      Object(kind::kVirtualService, "infra", "gateway-api:gw:8080:shop.example.com");
  ASSERT_NE(vs, nullptr);
  EXPECT_EQ(std::get<VirtualServiceSpec>(*vs->spec).routes.size(), 2u) << "/ and the mirrored /m";

  Condition accepted = RouteCondition("broken", "Accepted");
  EXPECT_FALSE(accepted.status);
  EXPECT_EQ(accepted.reason, "UnsupportedValue");
  EXPECT_TRUE(absl::StartsWith(accepted.message, "spec.hostnames: ")) << accepted.message;
  EXPECT_EQ(debug_.at(ObjectKey{kHttpRouteKind, "shop", "broken"}).reasons[0].path,
            "spec.hostnames");
}

TEST_F(GatewayApiConvertTest, RequestMirrorAndRedirectPort) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  json mirrored = PrefixRule("/m", {Backend("web", 80)});
  mirrored["filters"] = {
      {{"type", "RequestMirror"},
       {"requestMirror", {{"backendRef", Backend("api", 9000)}, {"percent", 10}}}},
      {{"type", "RequestMirror"}, {"requestMirror", {{"backendRef", Backend("gone", 80)}}}}};
  json moved = {{"matches", {{{"path", {{"type", "PathPrefix"}, {"value", "/old"}}}}}},
                {"filters",
                 {{{"type", "RequestRedirect"},
                   {"requestRedirect", {{"scheme", "https"}, {"port", 8443}}}}}}};
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "store", {"shop.example.com"}, {mirrored, moved}));
  Run();
  const GatewayObject* vs =
      Object(kind::kVirtualService, "infra", "gateway-api:gw:8080:shop.example.com");
  ASSERT_NE(vs, nullptr);
  const auto& routes = std::get<VirtualServiceSpec>(*vs->spec).routes;
  ASSERT_EQ(routes.size(), 2u);
  const holdfast::Route& m = routes[0].match.path.value == "/m" ? routes[0] : routes[1];
  const holdfast::Route& old = &m == &routes[0] ? routes[1] : routes[0];
  ASSERT_EQ(m.options.mirrors.size(), 1u) << "the mirror to a missing Service is left out";
  EXPECT_EQ(m.options.mirrors[0].upstream.ns, "shop");
  EXPECT_EQ(m.options.mirrors[0].per_million, 100'000u);
  ASSERT_TRUE(std::holds_alternative<Redirect>(old.action));
  EXPECT_EQ(std::get<Redirect>(old.action).port, 8443u);
  EXPECT_TRUE(std::get<Redirect>(old.action).https);

  Condition resolved = RouteCondition("store", "ResolvedRefs");
  EXPECT_FALSE(resolved.status);
  EXPECT_EQ(resolved.reason, "BackendNotFound");
  EXPECT_TRUE(RouteCondition("store", "Accepted").status) << "both rules are served";
  EXPECT_EQ(Status(kHttpRouteKind, "shop", "store").problems[0].path,
            "spec.rules[0].filters[1].requestMirror.backendRef.name");
  int policies = 0;
  for (const ResourcePtr& r : output_.resources) {
    if (!absl::EndsWith(r->type_url(), "RouteConfiguration") ||
        r->name() != "gateway/infra/gateway-api:gw:8080") {
      continue;
    }
    envoy::config::route::v3::RouteConfiguration config;
    ASSERT_TRUE(config.ParseFromString(r->serialized()));
    for (const auto& host : config.virtual_hosts()) {
      for (const auto& route : host.routes())
        policies += route.route().request_mirror_policies_size();
    }
  }
  EXPECT_EQ(policies, 1) << "the mirror reaches Envoy's route configuration";
}

// The conversions' outputs are the same: objects (in order), statuses,
// sources.
void ExpectSameConversion(const Conversion& got, const Conversion& want) {
  ASSERT_EQ(got.objects.size(), want.objects.size());
  for (size_t i = 0; i < want.objects.size(); ++i) {
    EXPECT_EQ(got.objects[i].key(), want.objects[i].key());
    EXPECT_EQ(got.objects[i].content_digest, want.objects[i].content_digest);
  }
  EXPECT_EQ(got.made_from, want.made_from);
  ASSERT_EQ(got.statuses.size(), want.statuses.size());
  for (const auto& [key, shared] : want.statuses) {
    const GatewayApiStatus& status = *shared;
    ASSERT_TRUE(got.statuses.contains(key)) << key.ToString();
    const GatewayApiStatus& other = got.statuses.at(key);
    EXPECT_EQ(other.key, status.key);
    EXPECT_EQ(other.generation, status.generation) << key.ToString();
    EXPECT_EQ(other.conditions, status.conditions) << key.ToString();
    ASSERT_EQ(other.listeners.size(), status.listeners.size()) << key.ToString();
    for (size_t l = 0; l < status.listeners.size(); ++l) {
      EXPECT_EQ(other.listeners[l].name, status.listeners[l].name);
      EXPECT_EQ(other.listeners[l].conditions, status.listeners[l].conditions);
      EXPECT_EQ(other.listeners[l].attached_routes, status.listeners[l].attached_routes)
          << key.ToString() << " listener " << status.listeners[l].name;
    }
    ASSERT_EQ(other.parents.size(), status.parents.size()) << key.ToString();
    for (size_t p = 0; p < status.parents.size(); ++p) {
      EXPECT_EQ(other.parents[p].parent_ref, status.parents[p].parent_ref) << key.ToString();
      EXPECT_EQ(other.parents[p].conditions, status.parents[p].conditions) << key.ToString();
    }
    std::vector<std::string> got_problems, want_problems;
    for (const FieldError& e : other.problems) got_problems.push_back(e.path + ": " + e.message);
    for (const FieldError& e : status.problems) want_problems.push_back(e.path + ": " + e.message);
    EXPECT_EQ(got_problems, want_problems) << key.ToString();
  }
}

TEST_F(GatewayApiConvertTest, CacheDecodesOnlyWhatChanged) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  for (int i = 0; i < 3; ++i) {
    AddHttpRoute(RouteJson("HTTPRoute", "shop", absl::StrCat("r", i),
                           {absl::StrCat("h", i, ".example.com")},
                           {PrefixRule("/", {Backend("web", 80)})}));
  }
  ConversionCache cache;
  const Conversion first = ConvertGatewayApi(input_, cache);
  EXPECT_GT(cache.decoder().remembered(), first.objects.size()) << "objects and rules checked";
  // The same input again: the same output, and nothing decoded (the
  // decoder, asked for nothing, forgets every text).
  const Conversion again = ConvertGatewayApi(input_, cache);
  EXPECT_EQ(cache.decoder().remembered(), 0u);
  ASSERT_EQ(again.objects.size(), first.objects.size());
  for (size_t i = 0; i < first.objects.size(); ++i) {
    EXPECT_EQ(again.objects[i].key(), first.objects[i].key());
    EXPECT_EQ(again.objects[i].content_digest, first.objects[i].content_digest);
    EXPECT_EQ(again.objects[i].meta.location.file, first.objects[i].meta.location.file);
  }
  // One route changed, one gone: the output is a fresh conversion's, and
  // what was decoded is the changed route's rules (checked) and virtual
  // service, the Upstream it now uses, and the Gateway listing one less.
  input_.routes[0] = Parsed(RouteJson("HTTPRoute", "shop", "r0", {"h0.example.com"},
                                      {PrefixRule("/v2", {Backend("api", 9000)})}),
                            false);
  input_.routes.pop_back();
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));
  EXPECT_EQ(cache.decoder().remembered(), 4u);
  EXPECT_EQ(cache.remembered_routes(), 2u);
}

TEST(GatewayApiStatusesTest, CopiesShareStatusesUntilOneIsChanged) {
  GatewayApiStatuses one;
  const ObjectKey key{kHttpRouteKind, "shop", "r"};
  one.Mutable(key).generation = 1;
  EXPECT_EQ(one.at(key).key, key);
  const GatewayApiStatus* made = &one.at(key);
  one.Mutable(key).generation = 2;
  EXPECT_EQ(&one.at(key), made) << "held by one map alone: changed in place";
  GatewayApiStatuses two = one;
  EXPECT_EQ(&two.at(key), made) << "a copy shares";
  two.Mutable(key).generation = 3;
  EXPECT_EQ(one.at(key).generation, 2) << "a change to a shared status copies it first";
  EXPECT_EQ(two.at(key).generation, 3);
  auto put = std::make_shared<GatewayApiStatus>();
  put->key = {kHttpRouteKind, "shop", "q"};
  two.Put(put);
  two.Mutable(put->key).generation = 4;
  EXPECT_EQ(put->generation, 0) << "what was put is shared with its maker";
  ASSERT_NE(two.Find(put->key), nullptr);
  EXPECT_EQ(two.Find({kHttpRouteKind, "shop", "none"}), nullptr);
}

// Random Gateway API inputs for the test below: routes changing one at a
// time, and now and then a Gateway, a namespace's labels or a Service.
class RandomGatewayApi {
 public:
  RandomGatewayApi(GatewayApiInput& input, uint32_t seed) : input_(input), random_(seed) {}

  json RandomRoute(const std::string& ns, const std::string& name) {
    std::vector<std::string> hostnames;
    for (int i = Pick(3); i > 0; --i) hostnames.push_back(Of(kHosts));
    std::vector<json> rules;
    for (int i = 1 + Pick(3); i > 0; --i) {
      std::vector<json> backends;
      for (int b = Pick(3); b > 0; --b) {
        // From another namespace: needs a ReferenceGrant in shop.
        const std::string to = ns == "shop" || Pick(2) == 0 ? "" : "shop";
        backends.push_back(Backend(Of(kServices), Of({80, 9000}), 1, to));
      }
      json rule = PrefixRule(Of(kPrefixes), backends);
      // An invalid regular expression: the rule is dropped alone.
      if (Pick(8) == 0) {
        rule["matches"][0]["path"] = {{"type", "RegularExpression"}, {"value", "("}};
      }
      // A path type the API does not have: the route is not accepted.
      if (Pick(20) == 0) rule["matches"][0]["path"]["type"] = "Bogus";
      rules.push_back(std::move(rule));
    }
    json parents = json::array();
    for (const std::string& gateway : kGateways) {
      if (Pick(3) == 0) continue;
      json parent = {{"name", gateway}, {"namespace", "infra"}};
      if (Pick(4) == 0) parent["sectionName"] = Of({"http", "api"});
      parents.push_back(parent);
    }
    json route = RouteJson("HTTPRoute", ns, name, hostnames.empty() ? json() : json(hostnames),
                           rules, parents, Of(kCreated));
    route["metadata"]["resourceVersion"] = NextVersion();
    return route;
  }
  void ReplaceGateway(size_t index) {
    std::vector<json> listeners = {HttpListener("http", Of({80, 8080}), Of({"", "*.example.com"}))};
    if (Pick(2) == 0) listeners.push_back(HttpListener("api", 8080, "api.example.com"));
    for (json& listener : listeners) {
      const int from = Pick(3);
      listener["allowedRoutes"]["namespaces"]["from"] = from == 0 ? "Same" : from == 1 ? "All"
                                                                                     : "Selector";
      if (from == 2) {
        listener["allowedRoutes"]["namespaces"]["selector"] = {{"matchLabels", {{"team", "a"}}}};
      }
    }
    json gateway = GatewayJson("infra", kGateways[index], listeners, Of(kCreated));
    gateway["metadata"]["resourceVersion"] = NextVersion();
    input_.gateways[index] = ParseGateway(gateway);
  }
  // One change; true when it is to routes alone.
  // Every route and Gateway read again: new objects, with new versions
  // when `written` (as after holdfast wrote their statuses).
  void ReadAgain(bool written) {
    for (auto& route : input_.routes) {
      Route copy = *route;
      if (written) copy.meta.resource_version = NextVersion();
      route = std::make_shared<const Route>(std::move(copy));
    }
    for (Gateway& gateway : input_.gateways) {
      if (written) gateway.meta.resource_version = NextVersion();
    }
  }
  // A Service gone or back, a port of one added or removed, or a Service
  // no route names: routes alone change (what they read of Services).
  void ChangeService() {
    const int which = Pick(3);
    const ServiceKey key{"shop", which == 0 ? "api" : which == 1 ? "web" : "unused"};
    std::vector<DiscoveredServicePort>& ports = input_.services[key].ports;
    if (which == 1) {
      if (ports.size() > 1) {
        ports.pop_back();
      } else {
        ports.push_back(DiscoveredServicePort{"grpc", 9000, "", {}});
      }
    } else if (ports.empty()) {
      input_.services.erase(key);
      AddService(input_, key.ns, key.name, 9000);
    } else {
      input_.services.erase(key);
    }
  }
  bool Change() {
    const int what = Pick(100);
    const std::string ns = Of({"shop", "team"});
    const std::string name = absl::StrCat("r", Pick(12));
    auto it = std::find_if(input_.routes.begin(), input_.routes.end(), [&](const auto& r) {
      return r->meta.ns == ns && r->meta.name == name;
    });
    if (what < 60) {
      auto route = std::make_shared<const Route>(ParseRoute(RandomRoute(ns, name), false));
      if (it == input_.routes.end()) {
        input_.routes.push_back(route);
      } else {
        *it = route;
      }
    } else if (what < 70) {
      if (it != input_.routes.end()) input_.routes.erase(it);
    } else if (what < 78) {
      ReadAgain(Pick(2) == 0);
    } else if (what < 86) {
      ReplaceGateway(Pick(2));
      return false;
    } else if (what < 90) {
      input_.namespace_labels["team"] = {{"team", Of({"a", "b"})}};
      return false;
    } else if (what < 93) {
      if (input_.grants.empty()) {
        input_.grants.push_back(
            ParseReferenceGrant(GrantJson("shop", "HTTPRoute", "team", "Service")));
      } else {
        input_.grants.clear();
      }
      return false;
    } else {
      ChangeService();
    }
    return true;
  }

 private:
  int Pick(int n) { return static_cast<int>(random_() % n); }
  template <typename T>
  T Of(std::initializer_list<T> items) {
    return items.begin()[Pick(static_cast<int>(items.size()))];
  }
  std::string Of(std::initializer_list<const char*> items) {
    return items.begin()[Pick(static_cast<int>(items.size()))];
  }
  std::string NextVersion() { return absl::StrCat(++version_); }

  static constexpr std::initializer_list<const char*> kHosts = {
      "a.example.com", "b.example.com", "api.example.com", "*.example.com", "other.org"};
  static constexpr std::initializer_list<const char*> kServices = {"web", "api", "missing"};
  static constexpr std::initializer_list<const char*> kPrefixes = {"/", "/a", "/b", "/api"};
  static constexpr std::initializer_list<const char*> kCreated = {
      "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"};
  static constexpr std::array<const char*, 2> kGateways = {"gw", "edge"};

  GatewayApiInput& input_;
  std::mt19937 random_;
  int64_t version_ = 0;
};

// A conversion with the cache of every conversion before it is a fresh
// conversion, through 400 random changes: what each route placed is taken
// back from every host when it changes or goes, and what a Gateway, a
// namespace or a Service changes reaches every route.
TEST_F(GatewayApiConvertTest, ConversionFromTheLastIsAFreshConversion) {
  RandomGatewayApi random(input_, 7);
  input_.gateways.push_back(input_.gateways[0]);
  random.ReplaceGateway(0);
  random.ReplaceGateway(1);
  input_.namespace_labels["shop"] = {{"team", "a"}};
  ConversionCache cache;
  int routes_alone = 0;
  size_t most_objects = 0;
  for (int step = 0; step < 400 && !HasFailure(); ++step) {
    routes_alone += random.Change();
    const Conversion fresh = ConvertGatewayApi(input_);
    ExpectSameConversion(ConvertGatewayApi(input_, cache), fresh);
    if (HasFailure()) ADD_FAILURE() << "at step " << step;
    most_objects = std::max(most_objects, fresh.objects.size());
  }
  EXPECT_GT(most_objects, 12u) << "Gateways, virtual services and Upstreams";
  EXPECT_GT(routes_alone, 250) << "most steps change routes (and Services) alone";
  // Nothing changed, or only versions (holdfast's status writes): no part
  // is made and nothing is decoded.
  ConvertGatewayApi(input_, cache);
  const uint64_t made = cache.placements().parts_made();
  ASSERT_FALSE(input_.routes.empty());
  std::weak_ptr<const Route> read_before = input_.routes.front();
  random.ReadAgain(true);
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));
  EXPECT_EQ(cache.placements().parts_made(), made);
  EXPECT_EQ(cache.decoder().remembered(), 0u);
  EXPECT_TRUE(read_before.expired()) << "the cache holds the routes read again, not both";
}

TEST_F(GatewayApiConvertTest, CacheKeepsRoutesWhileThemAndTheirBackendsAreTheSame) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  for (int i = 0; i < 3; ++i) {
    json route = RouteJson("HTTPRoute", "shop", absl::StrCat("r", i), {"shared.example.com"},
                           {PrefixRule(absl::StrCat("/", i), {Backend("web", 80)}),
                            PrefixRule(absl::StrCat("/api", i), {Backend("api", 9000)})});
    route["metadata"]["resourceVersion"] = absl::StrCat(10 + i);
    AddHttpRoute(route);
  }
  ConversionCache cache;
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));
  EXPECT_EQ(cache.remembered_routes(), 3u);
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));

  // A route changed (a new resourceVersion): converted again.
  json changed = RouteJson("HTTPRoute", "shop", "r1", {"shared.example.com"},
                           {PrefixRule("/moved", {Backend("web", 80)})});
  changed["metadata"]["resourceVersion"] = "20";
  input_.routes[1] = Parsed(changed, false);
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));

  // A Service gone, the routes the same: their backendRefs no longer
  // resolve, so what was kept must not be used.
  input_.services.erase(ServiceKey{"shop", "api"});
  const Conversion without_api = ConvertGatewayApi(input_, cache);
  ExpectSameConversion(without_api, ConvertGatewayApi(input_));
  const Condition* resolved =
      FindCondition(without_api.statuses.at({kHttpRouteKind, "shop", "r0"}).parents[0].conditions,
                    "ResolvedRefs");
  ASSERT_NE(resolved, nullptr);
  EXPECT_FALSE(resolved->status);

  // Endpoints change all the time and routes do not read them: the
  // routes are kept (ports are what matters).
  AddService(input_, "shop", "api", 9000);
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));
  input_.services.begin()->second.ports[0].endpoints.clear();
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));
  EXPECT_EQ(cache.remembered_routes(), 3u);

  // A route gone is forgotten.
  input_.routes.pop_back();
  ExpectSameConversion(ConvertGatewayApi(input_, cache), ConvertGatewayApi(input_));
  EXPECT_EQ(cache.remembered_routes(), 2u);
}

TEST_F(GatewayApiConvertTest, RoutesOnOneHostAreMergedByPrecedence) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  json exact = {{"matches", {{{"path", {{"type", "Exact"}, {"value", "/a/b"}}}}}},
                {"backendRefs", {Backend("api", 9000)}}};
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "old", {"shop.example.com"},
                         {PrefixRule("/", {Backend("web", 80)})}, nullptr, "2026-01-01T00:00:00Z"));
  AddHttpRoute(RouteJson("HTTPRoute", "shop", "new", {"shop.example.com"},
                         {PrefixRule("/a", {Backend("api", 9000)}), exact}, nullptr,
                         "2026-02-01T00:00:00Z"));
  Run();
  const GatewayObject* vs =
      Object(kind::kVirtualService, "infra", "gateway-api:gw:8080:shop.example.com");
  ASSERT_NE(vs, nullptr);
  const auto& routes = std::get<VirtualServiceSpec>(*vs->spec).routes;
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0].match.path.value, "/a/b");
  EXPECT_EQ(routes[1].match.path.value, "/a");
  EXPECT_EQ(routes[2].match.path.value, "/");
  EXPECT_EQ(Status(kGatewayKind, "infra", "gw").listeners[0].attached_routes, 2);
}

TEST_F(GatewayApiConvertTest, GrpcRouteReachesProxylessClients) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  json rule = {{"matches",
                {{{"method", {{"service", "shop.Cart"}, {"method", "Add"}}}},
                 {{"method", {{"service", "shop.Orders"}}}}}},
               {"backendRefs", {Backend("api", 9000)}}};
  AddGrpcRoute(RouteJson("GRPCRoute", "shop", "cart", {"grpc.example.com"}, {rule}));
  Run();
  const GatewayObject* vs =
      Object(kind::kVirtualService, "infra", "gateway-api:gw:8080:grpc.example.com");
  ASSERT_NE(vs, nullptr);
  const auto& routes = std::get<VirtualServiceSpec>(*vs->spec).routes;
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0].match.path.kind, StringMatch::Kind::kExact);
  EXPECT_EQ(routes[0].match.path.value, "/shop.Cart/Add");
  EXPECT_EQ(routes[1].match.path.value, "/shop.Orders/");
  const GatewayObject* upstream = Object(kind::kUpstream, "shop", "gateway-api:h2:api:9000");
  ASSERT_NE(upstream, nullptr);
  EXPECT_EQ(std::get<UpstreamSpec>(*upstream->spec).http2, true);
  EXPECT_TRUE(HasResource("Listener", "grpc.example.com"));
  std::string grpc =
      ResourceText("RouteConfiguration", "grpc/infra/gateway-api:gw:8080:grpc.example.com");
  EXPECT_TRUE(absl::StrContains(grpc, "shop/gateway-api:h2:api:9000")) << grpc;
  EXPECT_TRUE(RouteCondition("cart", "Accepted", kGrpcRouteKind).status);
}

TEST_F(GatewayApiConvertTest, ListenerConflictsAndUnsupportedProtocols) {
  AddGateway(GatewayJson("infra", "gw2",
                         {HttpListener("a", 9000, "x.example.com"),
                          HttpListener("b", 9000, "x.example.com"),
                          {{"name", "tcp"}, {"port", 9001}, {"protocol", "TCP"}},
                          HttpListener("taken", 8080)},
                         "2026-03-01T00:00:00Z"));
  Run();
  const GatewayApiStatus& gw2 = Status(kGatewayKind, "infra", "gw2");
  ASSERT_EQ(gw2.listeners.size(), 4u);
  EXPECT_TRUE(FindCondition(gw2.listeners[0].conditions, "Programmed")->status);
  EXPECT_EQ(FindCondition(gw2.listeners[1].conditions, "Conflicted")->reason, "HostnameConflict");
  EXPECT_TRUE(FindCondition(gw2.listeners[1].conditions, "Conflicted")->status);
  EXPECT_EQ(FindCondition(gw2.listeners[2].conditions, "Accepted")->reason, "UnsupportedProtocol");
  EXPECT_EQ(FindCondition(gw2.listeners[3].conditions, "Accepted")->reason, "PortUnavailable");
  const Condition* accepted = FindCondition(gw2.conditions, "Accepted");
  EXPECT_TRUE(accepted->status);
  EXPECT_EQ(accepted->reason, "ListenersNotValid");
  EXPECT_TRUE(
      FindCondition(Status(kGatewayKind, "infra", "gw").listeners[0].conditions, "Programmed")
          ->status)
      << "the older Gateway keeps its port";
}

TEST_F(GatewayApiConvertTest, MistypedGatewayFieldIsNamed) {
  json listener = HttpListener("http", 9000);
  listener["port"] = "nine";
  AddGateway(GatewayJson("infra", "broken", {listener}));
  Run();
  const GatewayApiStatus& broken = Status(kGatewayKind, "infra", "broken");
  ASSERT_FALSE(broken.problems.empty());
  EXPECT_EQ(broken.problems[0].path, "spec.listeners[0].port");
  EXPECT_FALSE(FindCondition(broken.conditions, "Accepted")->status);
  EXPECT_FALSE(FindCondition(broken.conditions, "Programmed")->status);
  const ObjectStatus& debug = debug_.at(ObjectKey{kGatewayKind, "infra", "broken"});
  EXPECT_EQ(debug.state, StatusState::kRejected);
  EXPECT_EQ(debug.reasons[0].path, "spec.listeners[0].port");
  EXPECT_TRUE(FindCondition(Status(kGatewayKind, "infra", "gw").conditions, "Programmed")->status)
      << "the valid Gateway keeps being served";
}

TEST_F(GatewayApiConvertTest, HttpsListenerCertificates) {
  json https = {{"name", "https"},
                {"port", 8443},
                {"protocol", "HTTPS"},
                {"tls", {{"certificateRefs", {{{"name", "cert"}, {"namespace", "certs"}}}}}}};
  AddGateway(GatewayJson("infra", "secure", {https}));
  input_.secrets[ServiceKey{"certs", "cert"}] = {"CERT", "KEY"};
  Run();
  EXPECT_EQ(
      FindCondition(Status(kGatewayKind, "infra", "secure").listeners[0].conditions, "ResolvedRefs")
          ->reason,
      "RefNotPermitted");
  input_.grants.push_back(ParseReferenceGrant(GrantJson("certs", "Gateway", "infra", "Secret")));
  Run();
  EXPECT_TRUE(
      FindCondition(Status(kGatewayKind, "infra", "secure").listeners[0].conditions, "ResolvedRefs")
          ->status);
  const GatewayObject* gw = Object(kind::kGateway, "infra", "gateway-api:secure:8443");
  ASSERT_NE(gw, nullptr);
  ASSERT_TRUE(std::get<GatewaySpec>(*gw->spec).tls.has_value());
  EXPECT_NE(Object(kind::kSecret, "infra", "gateway-api:secret:certs:cert"), nullptr);
  EXPECT_TRUE(
      absl::StrContains(ResourceText("Listener", "gateway/infra/gateway-api:secure:8443"), "CERT"));
  input_.secrets.clear();
  Run();
  EXPECT_EQ(
      FindCondition(Status(kGatewayKind, "infra", "secure").listeners[0].conditions, "ResolvedRefs")
          ->reason,
      "InvalidCertificateRef");
}

TEST_F(GatewayApiConvertTest, HttpsListenersOnOnePortChooseCertificatesBySni) {
  auto https = [](const std::string& name, const std::string& hostname, const std::string& cert) {
    json l = {{"name", name},
              {"port", 8443},
              {"protocol", "HTTPS"},
              {"tls", {{"certificateRefs", {{{"name", cert}}}}}}};
    if (!hostname.empty()) l["hostname"] = hostname;
    return l;
  };
  AddGateway(GatewayJson(
      "infra", "edge",
      {https("shop", "shop.example.com", "shop-cert"),
       https("api", "*.api.example.com", "api-cert"), https("api-v2", "v2.example.com", "api-cert"),
       https("other", "", "default-cert")}));
  for (const char* cert : {"shop-cert", "api-cert", "default-cert"}) {
    input_.secrets[ServiceKey{"infra", cert}] = {absl::StrCat("CERT-", cert),
                                                 absl::StrCat("KEY-", cert)};
  }
  Run();
  for (const ListenerStatus& listener : Status(kGatewayKind, "infra", "edge").listeners) {
    EXPECT_TRUE(FindCondition(listener.conditions, "Programmed")->status)
        << listener.name << ": " << FindCondition(listener.conditions, "Programmed")->message;
  }
  const GatewayObject* gw = Object(kind::kGateway, "infra", "gateway-api:edge:8443");
  ASSERT_NE(gw, nullptr);
  const GatewayTls& tls = *std::get<GatewaySpec>(*gw->spec).tls;
  EXPECT_EQ(tls.certificate.secret.name, "gateway-api:secret:infra:default-cert");
  ASSERT_EQ(tls.sni.size(), 2u);  // by Secret: api-cert's two names, shop-cert's one
  EXPECT_EQ(tls.sni[0].server_names,
            (std::vector<std::string>{"*.api.example.com", "v2.example.com"}));
  EXPECT_EQ(tls.sni[1].server_names, std::vector<std::string>{"shop.example.com"});

  envoy::config::listener::v3::Listener listener;
  for (const ResourcePtr& r : output_.resources) {
    if (r->name() == "gateway/infra/gateway-api:edge:8443" &&
        absl::EndsWith(r->type_url(), "Listener")) {
      ASSERT_TRUE(listener.ParseFromString(r->serialized()));
    }
  }
  ASSERT_EQ(listener.filter_chains_size(), 3);
  EXPECT_EQ(listener.filter_chains(0).filter_chain_match().server_names_size(), 2);
  EXPECT_EQ(listener.filter_chains(1).filter_chain_match().server_names(0), "shop.example.com");
  EXPECT_FALSE(listener.filter_chains(2).has_filter_chain_match()) << "the default certificate";
  EXPECT_TRUE(absl::StrContains(listener.filter_chains(1).ShortDebugString(), "CERT-shop-cert"));
  EXPECT_TRUE(absl::StrContains(listener.filter_chains(2).ShortDebugString(), "CERT-default-cert"));
  ASSERT_EQ(listener.listener_filters_size(), 1);
  EXPECT_EQ(listener.listener_filters(0).name(), "envoy.filters.listener.tls_inspector");
  for (const auto& chain : listener.filter_chains()) {
    ASSERT_EQ(chain.filters_size(), 1);
    EXPECT_EQ(chain.filters(0).name(), "envoy.filters.network.http_connection_manager");
  }
}

TEST_F(GatewayApiConvertTest, StatusJsonFollowsTheConventions) {
  input_.gateways[0].listeners[0].from = Listener::From::kAll;
  AddHttpRoute(
      RouteJson("HTTPRoute", "shop", "store", nullptr, {PrefixRule("/", {Backend("web", 80)})}));
  Run();
  const absl::Time t1 = absl::FromUnixSeconds(1767225600);  // 2026-01-01
  const absl::Time t2 = t1 + absl::Hours(1);
  const GatewayApiStatus& route = Status(kHttpRouteKind, "shop", "store");
  json other = {{"parentRef", {{"name", "elsewhere"}}}, {"controllerName", "example.com/x"}};
  json first = GatewayApiStatusJson(route, {{"parents", {other}}}, t1);
  ASSERT_EQ(first["parents"].size(), 2u);
  EXPECT_EQ(first["parents"][0], other) << "other controllers' entries are kept";
  const json& ours = first["parents"][1];
  EXPECT_EQ(ours["controllerName"], kControllerName);
  EXPECT_EQ(ours["parentRef"], (json{{"name", "gw"}, {"namespace", "infra"}}));
  EXPECT_EQ(ours["conditions"][0]["type"], "Accepted");
  EXPECT_EQ(ours["conditions"][0]["status"], "True");
  EXPECT_EQ(ours["conditions"][0]["observedGeneration"], 3);
  EXPECT_EQ(ours["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
  json second = GatewayApiStatusJson(route, first, t2);
  EXPECT_EQ(second["parents"][1]["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:00Z")
      << "unchanged conditions keep their transition time";

  json gateway = GatewayApiStatusJson(Status(kGatewayKind, "infra", "gw"),
                                      {{"addresses", {{{"value", "10.0.0.1"}}}}}, t1);
  EXPECT_EQ(gateway["addresses"][0]["value"], "10.0.0.1");
  EXPECT_EQ(gateway["conditions"][1]["type"], "Programmed");
  EXPECT_EQ(gateway["listeners"][0]["attachedRoutes"], 1);
  EXPECT_EQ(gateway["listeners"][0]["supportedKinds"].size(), 2u);
  EXPECT_EQ(gateway["listeners"][0]["conditions"].size(), 4u);
  EXPECT_EQ(gateway["conditions"][0]["observedGeneration"], 2);
}

}  // namespace
}  // namespace holdfast::gateway_api
