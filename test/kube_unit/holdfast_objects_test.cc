#include "src/gateway_api/holdfast_objects.h"

#include <gtest/gtest.h>

#include "src/model/decode.h"
#include "src/translate/translator.h"

namespace holdfast::gateway_api {
namespace {

using nlohmann::json;

// The decoder builds each document in memory instead of writing and
// parsing its text: these tests hold it to what the text would decode to.
struct Decoded {
  std::optional<GatewayObject> object;
  std::vector<std::string> errors;  // "path: message"
};

Decoded ByDecoder(HoldfastObjectDecoder& decoder, const std::string& kind, const json& spec) {
  FieldErrors errors;
  Decoded out;
  out.object = decoder.Decode(kind, "shop", "synthesized:" + kind, spec, &errors);
  for (const FieldError& e : errors.errors()) out.errors.push_back(e.path + ": " + e.message);
  return out;
}

Decoded ByText(const std::string& kind, const json& spec) {
  const json document = {{"apiVersion", "holdfast.dev/v1"},
                         {"kind", kind},
                         {"metadata", {{"name", "synthesized"}, {"namespace", "shop"}}},
                         {"spec", spec}};
  DecodedFile file =
      DecodeObjects(document.dump(-1, ' ', false, json::error_handler_t::replace), "text.json");
  Decoded out;
  EXPECT_FALSE(file.syntax_error.has_value());
  EXPECT_EQ(file.objects.size(), 1u);
  if (file.objects.size() != 1) return out;
  out.object = file.objects[0].object;
  if (out.object) out.object->meta.name = "synthesized:" + kind;
  for (const FieldError& e : file.objects[0].errors.errors()) {
    out.errors.push_back(e.path + ": " + e.message);
  }
  return out;
}

const json kUpstream = json::parse(R"({
  "hosts": [{"address": "127.0.0.1", "port": 8081}, {"address": "127.0.0.1", "port": 8082, "weight": 2}],
  "connectTimeout": "2s", "loadBalancing": "RoundRobin", "http2": true,
  "circuitBreakers": {"maxConnections": 1024, "maxRequests": 1024},
  "healthCheck": {"path": "/healthz", "interval": "5s", "timeout": "1s"},
  "outlierDetection": {"consecutive5xx": 5, "interval": "10s", "baseEjectionTime": "30s"}})");

const json kVirtualService = json::parse(R"({
  "domains": ["shop.example.com", "*.shop.example.com"],
  "routes": [
    {"name": "beta", "match": {"prefix": "/api/", "headers": [{"name": "x-beta", "exact": "true"}]},
     "upstream": "synthesized:Upstream"},
    {"match": {"regex": "/v[0-9]+/.*", "methods": ["GET", "POST"]},
     "upstreams": [{"name": "synthesized:Upstream", "weight": 90}, {"name": "missing", "weight": 10}],
     "options": {"timeout": "5s", "retries": {"retryOn": "5xx", "numRetries": 2, "perTryTimeout": "2s"},
                 "requestHeaders": {"set": {"x-gateway": "holdfast", "x-line": "a\u00e9b"}},
                 "cors": {"allowOrigins": ["https://shop.example.com"], "maxAge": "1h"}}},
    {"match": {"prefix": "/catalog"}, "redirect": {"path": "/api/catalog", "code": 308}},
    {"match": {"exact": "/health"}, "directResponse": {"status": 200, "body": "ok\n"}}]})");

const json kGateway = json::parse(R"({
  "port": 8080, "virtualServices": [{"name": "synthesized:VirtualService"}]})");

TEST(HoldfastObjectDecoderTest, ValidObjectsTranslateAsTheirTextWould) {
  HoldfastObjectDecoder decoder;
  TranslationInput by_decoder, by_text;
  for (const auto& [kind, spec] : {std::pair{kind::kUpstream, kUpstream},
                                   {kind::kVirtualService, kVirtualService},
                                   {kind::kGateway, kGateway}}) {
    Decoded built = ByDecoder(decoder, kind, spec);
    Decoded parsed = ByText(kind, spec);
    ASSERT_TRUE(built.object.has_value()) << kind << ": " << testing::PrintToString(built.errors);
    ASSERT_TRUE(parsed.object.has_value()) << kind;
    by_decoder.objects[built.object->key()] = *built.object;
    by_text.objects[parsed.object->key()] = *parsed.object;
  }
  EXPECT_EQ(decoder.decoded_as_text(), 0u) << "built in memory";
  const TranslationOutput a = Translator().Translate(by_decoder);
  const TranslationOutput b = Translator().Translate(by_text);
  ASSERT_EQ(a.resources.size(), b.resources.size());
  ASSERT_GE(a.resources.size(), 4u) << "listener, route configuration, cluster, assignment";
  for (size_t i = 0; i < a.resources.size(); ++i) {
    EXPECT_EQ(a.resources[i]->name(), b.resources[i]->name());
    EXPECT_EQ(a.resources[i]->version(), b.resources[i]->version()) << a.resources[i]->name();
  }
}

TEST(HoldfastObjectDecoderTest, InvalidObjectsFailAsTheirTextWould) {
  const std::vector<std::pair<std::string, json>> cases = {
      {kind::kUpstream, {{"hosts", {{{"address", "127.0.0.1"}, {"port", 70000}}}}}},
      {kind::kUpstream, {{"hosts", {{{"address", 5}, {"port", "80"}}}}, {"http2", "yes"}}},
      {kind::kUpstream, {{"hosts", "127.0.0.1"}, {"unknown", nullptr}}},
      {kind::kVirtualService,
       {{"domains", {"a.example.com"}},
        {"routes", {{{"match", {{"regex", "("}}}, {"upstream", "x"}}}}}},
      {kind::kVirtualService, {{"domains", {{{"not", "a string"}}}}, {"routes", json::array()}}},
      {kind::kVirtualService,
       {{"domains", {"a.example.com"}},
        {"routes",
         {{{"match", {{"prefix", "/"}}}, {"upstream", "x"}, {"redirect", {{"code", 1.5}}}}}}}},
      {kind::kGateway, {{"port", -1}, {"virtualServices", {{{"name", true}}}}}},
      {kind::kGateway, json::array()},
      // Scalars are read as JSON writes them, as a YAML parser reads JSON.
      {kind::kUpstream, {{"hosts", {{{"address", "127.0.0.1"}, {"port", 80.0}}}}}},
      {kind::kUpstream,
       {{"hosts", {{{"address", "127.0.0.1"}, {"port", 80}}}}, {"loadBalancing", false}}},
      {kind::kUpstream, {{"hosts", nullptr}}},
      {kind::kVirtualService, {{"domains", {"a\nb.example.com"}}, {"routes", json::array()}}},
      {kind::kVirtualService, {{"domains", {nullptr}}, {"routes", json::array()}}},
      {kind::kGateway,
       {{"port", 80}, {"virtualServiceSelector", {{"labels", {{"a", 1}, {"b", {1, 2}}}}}}}},
      {kind::kGateway,
       {{"port", 80}, {"virtualServices", json::object()}, {"x", {{"y", nullptr}}}}},
  };
  HoldfastObjectDecoder decoder;
  for (const auto& [kind, spec] : cases) {
    Decoded built = ByDecoder(decoder, kind, spec);
    Decoded parsed = ByText(kind, spec);
    EXPECT_FALSE(built.object.has_value()) << spec.dump();
    EXPECT_FALSE(built.errors.empty()) << spec.dump();
    EXPECT_EQ(built.errors, parsed.errors) << spec.dump();
  }
  EXPECT_EQ(decoder.decoded_as_text(), 0u) << "built in memory";
}

TEST(HoldfastObjectDecoderTest, TextThatIsNotUtf8IsDecodedWithReplacements) {
  HoldfastObjectDecoder decoder;
  json spec = kVirtualService;
  spec["domains"][0] = std::string("sh\xffop.example.com");
  Decoded built = ByDecoder(decoder, kind::kVirtualService, spec);
  Decoded parsed = ByText(kind::kVirtualService, spec);
  EXPECT_EQ(built.object.has_value(), parsed.object.has_value());
  EXPECT_EQ(built.errors, parsed.errors);
  EXPECT_EQ(decoder.decoded_as_text(), 1u);
}

}  // namespace
}  // namespace holdfast::gateway_api
