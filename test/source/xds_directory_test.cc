#include "src/source/xds_directory.h"

#include <filesystem>
#include <fstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "src/source/directory_scanner.h"
#include "src/source/envoy_file_parser.h"
#include "src/source/json_resource_document.h"
#include "src/translate/envoy_validation.h"

namespace holdfast {
namespace {

constexpr char kCluster[] = R"(
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: backend
type: EDS
eds_cluster_config: {eds_config: {ads: {}}}
connect_timeout: 1s
)";

constexpr char kEndpoints[] = R"(
"@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
cluster_name: backend
endpoints:
- load_balancing_weight: 1
  lb_endpoints:
  - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
)";

struct ParseCase {
  std::string label;
  std::string contents;
  size_t resources;
  std::string problem;  // substring of the only problem, or empty
  int line = 0;         // expected line of the problem, 0: don't care
};

TEST(EnvoyFileParserTest, Formats) {
  std::vector<ParseCase> cases = {
      {"bare resource", kCluster, 1, ""},
      {"two documents", absl::StrCat(kCluster, "---", kEndpoints), 2, ""},
      {"discovery response",
       "version_info: '1'\nresources:\n- \"@type\": "
       "type.googleapis.com/envoy.config.cluster.v3.Cluster\n"
       "  name: a\n  connect_timeout: 2s\n",
       1, ""},
      {"json",
       R"({"resources": [{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "j"}]})",
       1, ""},
      {"unknown type", "\"@type\": type.googleapis.com/nope.Nope\nname: x\n", 0, "unknown type", 1},
      {"missing type", "name: x\n", 0, "no \"@type\"", 1},
      {"unknown field",
       "resources:\n- name: ok\n  \"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n"
       "- name: bad\n  \"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n  colour: "
       "red\n",
       1, "colour", 4},
      {"yaml syntax", "resources: [\n  {a: b\n", 0, "", 0},
  };
  for (const ParseCase& c : cases) {
    ParsedFile parsed = ParseEnvoyResources(c.contents);
    EXPECT_EQ(parsed.resources.size(), c.resources) << c.label;
    if (c.label == "yaml syntax") {
      EXPECT_TRUE(parsed.unreadable) << c.label;
      ASSERT_EQ(parsed.problems.size(), 1u) << c.label;
      continue;
    }
    if (c.problem.empty()) {
      EXPECT_TRUE(parsed.problems.empty()) << c.label << ": " << parsed.problems[0].message;
    } else {
      ASSERT_EQ(parsed.problems.size(), 1u) << c.label;
      EXPECT_NE(parsed.problems[0].message.find(c.problem), std::string::npos)
          << c.label << ": " << parsed.problems[0].message;
      if (c.line) EXPECT_EQ(parsed.problems[0].line, c.line) << c.label;
    }
  }
}

void ExpectSameParse(const ParsedFile& json, const ParsedFile& yaml, const std::string& label) {
  EXPECT_EQ(json.unreadable, yaml.unreadable) << label;
  ASSERT_EQ(json.resources.size(), yaml.resources.size()) << label;
  for (size_t i = 0; i < json.resources.size(); ++i) {
    const ParsedResource& a = json.resources[i];
    const ParsedResource& b = yaml.resources[i];
    EXPECT_EQ(std::tie(a.type_url, a.name, a.line), std::tie(b.type_url, b.name, b.line)) << label;
    EXPECT_EQ(a.message->SerializeAsString(), b.message->SerializeAsString()) << label;
  }
  ASSERT_EQ(json.problems.size(), yaml.problems.size()) << label;
  for (size_t i = 0; i < json.problems.size(); ++i) {
    const FileProblem& a = json.problems[i];
    const FileProblem& b = yaml.problems[i];
    EXPECT_EQ(std::tie(a.line, a.type_url, a.name, a.message),
              std::tie(b.line, b.type_url, b.name, b.message))
        << label;
  }
}

// Levels of aliases, each ten copies of the one before, over ten "x".
std::string AliasLevels(int levels) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= levels; ++level) {
    const std::string previous = absl::StrCat("*a", level - 1);
    absl::StrAppend(&yaml, "a", level, ": &a", level, " [");
    for (int i = 0; i < 10; ++i) absl::StrAppend(&yaml, i > 0 ? ", " : "", previous);
    yaml += "]\n";
  }
  return yaml;
}

// What aliases may add does not grow with the file: a file padded with
// comments once bought its aliases 16 units of expansion per byte (a 4 MB
// one took 2 GB to refuse). Without aliases, a large file still passes.
TEST(EnvoyFileParserTest, AliasExpansionDoesNotGrowWithPadding) {
  const std::string padding(256 * 1024, '#');  // one comment line
  // About 2.4 million units: a million scalars of one byte, and their lists.
  const std::string yaml = padding + "\n" + AliasLevels(4) + "b: [" +
                           absl::StrJoin(std::vector<std::string>(10, "*a4"), ", ") + "]\n";
  ParsedFile parsed = ParseEnvoyResources(yaml);
  ASSERT_EQ(parsed.problems.size(), 1u);
  EXPECT_NE(parsed.problems[0].message.find("expands to too many"), std::string::npos)
      << parsed.problems[0].message;

  // Without aliases a file costs at most a unit per byte (a node needs a
  // byte around it, a scalar's bytes are its own): this one more than
  // aliases may add.
  std::string dense = "a: [";
  for (int i = 0; i < 11'000; ++i) absl::StrAppend(&dense, std::string(99, 'x'), ",");
  dense += "x]\n";
  parsed = ParseEnvoyResources(dense);
  ASSERT_EQ(parsed.problems.size(), 1u);
  EXPECT_EQ(parsed.problems[0].message.find("expands"), std::string::npos)
      << parsed.problems[0].message;
}

// A small file's aliases expand in proportion to its size, not to the
// fixed cap: five levels (about 230,000 units from some 300 bytes) were
// accepted under a flat 1 Mi, so a 511-byte alias bomb cost 120 ms to refuse.
// Three levels (about 2,300 units) still pass.
TEST(EnvoyFileParserTest, SmallFilesExpandInProportionToTheirSize) {
  const std::string bomb = AliasLevels(4);
  ASSERT_LT(bomb.size(), 400u);
  ParsedFile parsed = ParseEnvoyResources(bomb);
  ASSERT_EQ(parsed.problems.size(), 1u);
  EXPECT_NE(parsed.problems[0].message.find("expands to too many"), std::string::npos)
      << parsed.problems[0].message;

  parsed = ParseEnvoyResources(AliasLevels(2));
  ASSERT_EQ(parsed.problems.size(), 1u);
  EXPECT_EQ(parsed.problems[0].message.find("expands"), std::string::npos)
      << parsed.problems[0].message;
}

// A JSON object takes the JSON reader; what it yields, lines and messages
// included, is what the YAML reader yields for the same text.
TEST(EnvoyFileParserTest, JsonFilesParseAsTheYamlPathParsesThem) {
  const std::string cluster = R"("@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster")";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"list over lines, one bad",
       absl::StrCat("\n{\"version_info\": \"7\",\n \"resources\": [\n  {", cluster,
                    ", \"name\": \"a\",\n   \"connect_timeout\": \"1.5s\"},\n\n  {", cluster,
                    ",\n   \"name\": \"b\", \"colour\": \"red\"},\n  {", cluster,
                    ", \"name\": \"c\\u00e9\\n\", \"per_connection_buffer_limit_bytes\": 7}]}\n")},
      {"bare resource", absl::StrCat("\n\n  {", cluster, ",\n \"name\": \"x\",\n \"type\": 3}")},
      {"resources not a list", "{\"version_info\": \"1\",\n\n \"resources\": null}"},
      {"resources a number", "{\"version_info\": \"1\",\n \"resources\": 12\n}"},
      {"integer beyond 64 bits",
       absl::StrCat("{", cluster,
                    ", \"name\": \"big\",\n"
                    "\"per_connection_buffer_limit_bytes\": 123456789012345678901234567890}")},
      {"negative and fractional numbers",
       absl::StrCat("{", cluster, ", \"name\": \"n\", \"per_connection_buffer_limit_bytes\": -1,",
                    " \"lb_subset_config\": {\"fallback_policy\": 1.0}}")},
      {"duplicate keys in a resource, the last wins",
       absl::StrCat("{\"resources\": [{", cluster,
                    ", \"name\": \"1st\", \"name\": \"2nd\"}]}")},
      {"type and resources", absl::StrCat("{", cluster, ", \"name\": \"t\", \"resources\": []}")},
      {"not a resource inside", "{\"resources\": [[1, 2],\n \"text\", {\"@type\": 5}]}"},
      {"unknown type", "{\"@type\": \"type.googleapis.com/nope.Nope\", \"name\": \"x\"}"},
      {"nested deep",
       absl::StrCat("{", cluster, ", \"name\": \"d\", \"metadata\": {\"filter_metadata\": {\"a\": ",
                    std::string(40, '['), std::string(40, ']'), "}}}")},
  };
  for (const auto& [label, text] : cases) {
    ASSERT_TRUE(ReadJsonResourceDocument(text, 60).has_value()) << label << ": not read as JSON";
    ExpectSameParse(ParseEnvoyResources(text), ParseEnvoyResourcesAsYaml(text), label);
  }
  ParsedFile list = ParseEnvoyResources(cases[0].second);
  ASSERT_EQ(list.resources.size(), 2u);
  EXPECT_EQ(list.resources[0].line, 4);
  EXPECT_EQ(list.resources[1].line, 9);
  ASSERT_EQ(list.problems.size(), 1u);
  EXPECT_EQ(list.problems[0].line, 7);

  // Not one JSON object: the YAML reader's result, whatever the JSON reader
  // would have made of it.
  for (const std::string& text : {std::string("[{\"name\": \"x\"}]"), std::string("name: x\n"),
                                  std::string("{\"name\": \"\xff\"}"), std::string("{a: 1}"),
                                  absl::StrCat(std::string(100, '['), std::string(100, ']')),
                                  std::string("{\"n\": 1e400}"),
                                  std::string("{\"name\": \"x\"}\0\t\n", 16),
                                  std::string("{\"type\":\r\r \"EDS\"}"),
                                  // yaml-cpp's lookup finds the first, its iteration the last
                                  std::string("{\"resources\": [], \"resources\": 1}")}) {
    EXPECT_FALSE(ReadJsonResourceDocument(text, 60).has_value()) << text;
  }
}

TEST(EnvoyValidationTest, AppliesEnvoyRulesIncludingInsideAny) {
  struct Case {
    std::string label;
    std::string yaml;
    std::string error;  // empty: valid
  };
  std::vector<Case> cases = {
      {"valid endpoints", kEndpoints, ""},
      {"port out of range",
       "\"@type\": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment\n"
       "cluster_name: x\nendpoints:\n- lb_endpoints:\n  - endpoint: {address: {socket_address: "
       "{address: 127.0.0.1, port_value: 70000}}}\n",
       "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value"},
      {"empty cluster name in route (inside HCM Any)",
       R"("@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    stat_prefix: s
    route_config:
      name: r
      virtual_hosts:
      - name: v
        domains: []
        routes: []
)",
       "api_listener.api_listener"},
      {"empty stat prefix of an HCM in a filter chain (path through lists and Any)",
       R"("@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains:
- filters: [{name: a, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}]
- filters:
  - name: hcm
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      rds: {route_config_name: r, config_source: {ads: {}}}
)",
       "filter_chains[1].filters[0].typed_config.stat_prefix: value length must be at least 1"},
  };
  for (const Case& c : cases) {
    ParsedFile parsed = ParseEnvoyResources(c.yaml);
    ASSERT_EQ(parsed.resources.size(), 1u) << c.label;
    absl::Status status = ValidateEnvoyResource(*parsed.resources[0].message);
    if (c.error.empty()) {
      EXPECT_TRUE(status.ok()) << c.label << ": " << status;
    } else {
      ASSERT_FALSE(status.ok()) << c.label;
      EXPECT_NE(status.message().find(c.error), std::string::npos) << c.label << ": " << status;
    }
  }
}

class XdsDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("holdfast-dir-", getpid(), "-",
                        ::testing::UnitTest::GetInstance()->random_seed(), "-",
                        reinterpret_cast<uintptr_t>(this));
    std::filesystem::create_directories(dir_);
    source_ = std::make_unique<XdsDirectorySource>(
        XdsDirectorySource::Options{dir_.string()}, clock_, &metrics_,
        [this](SnapshotPtr s) { published_.push_back(std::move(s)); });
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& name, const std::string& contents) {
    // Rename into place, as editors and config management do, so that the
    // fingerprint changes even within one mtime tick.
    std::ofstream(dir_ / (name + ".tmp")) << contents;
    std::filesystem::rename(dir_ / (name + ".tmp"), dir_ / name);
  }
  SnapshotPtr Last() { return published_.empty() ? nullptr : published_.back(); }
  const Resource* Find(absl::string_view type, const std::string& name) {
    const ResourceMap& map = Last()->Resources(type);
    auto it = map.find(name);
    return it == map.end() ? nullptr : it->second.get();
  }

  std::filesystem::path dir_;
  SimulatedClock clock_;
  MetricsRegistry metrics_;
  std::vector<SnapshotPtr> published_;
  std::unique_ptr<XdsDirectorySource> source_;
};

TEST_F(XdsDirectoryTest, ServesValidFilesAndRejectsBadOnesByFileAndLine) {
  Write("cluster.yaml", kCluster);
  Write("endpoints.yaml", kEndpoints);
  Write("broken.yaml",
        "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: x\nbogus: 1\n");
  ASSERT_TRUE(source_->Reload().ok());
  ASSERT_NE(Last(), nullptr);
  EXPECT_NE(Find(type_url::kCluster, "backend"), nullptr);
  EXPECT_NE(Find(type_url::kClusterLoadAssignment, "backend"), nullptr);
  auto rejections = source_->rejections();
  ASSERT_EQ(rejections.size(), 1u);
  EXPECT_EQ(rejections[0].file, (dir_ / "broken.yaml").string());
  EXPECT_EQ(rejections[0].line, 1);
  EXPECT_EQ(rejections[0].name, "x");
  EXPECT_NE(rejections[0].message.find("bogus"), std::string::npos) << rejections[0].message;
}

TEST_F(XdsDirectoryTest, RejectedResourceKeepsItsLastGoodVersion) {
  Write("cluster.yaml", kCluster);
  Write("endpoints.yaml", kEndpoints);
  ASSERT_TRUE(source_->Reload().ok());
  std::string good_version = Find(type_url::kClusterLoadAssignment, "backend")->version();

  // Break the endpoints (port out of range): the good version stays.
  std::string bad = kEndpoints;
  bad.replace(bad.find("8080"), 4, "99999");
  Write("endpoints.yaml", bad);
  ASSERT_TRUE(source_->Reload().ok());
  EXPECT_EQ(Find(type_url::kClusterLoadAssignment, "backend")->version(), good_version);
  auto rejections = source_->rejections();
  ASSERT_EQ(rejections.size(), 1u);
  EXPECT_TRUE(rejections[0].serving_last_good);
  EXPECT_NE(rejections[0].message.find(
                "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value: value "
                "must be less than or equal to 65535"),
            std::string::npos)
      << rejections[0].message;

  // A file that no longer parses at all keeps everything it held.
  Write("cluster.yaml", "name: [unclosed\n");
  ASSERT_TRUE(source_->Reload().ok());
  EXPECT_NE(Find(type_url::kCluster, "backend"), nullptr);

  // Fixing both clears the rejections and serves the new endpoints.
  Write("cluster.yaml", kCluster);
  std::string changed = kEndpoints;
  changed.replace(changed.find("8080"), 4, "8081");
  Write("endpoints.yaml", changed);
  ASSERT_TRUE(source_->Reload().ok());
  EXPECT_NE(Find(type_url::kClusterLoadAssignment, "backend")->version(), good_version);
  EXPECT_TRUE(source_->rejections().empty());
}

TEST_F(XdsDirectoryTest, DanglingReferencesAndDuplicatesAreRejected) {
  Write("a-cluster.yaml", kCluster);  // EDS cluster without its endpoints
  Write("b-dup.yaml", kCluster);
  ASSERT_TRUE(source_->Reload().ok());
  EXPECT_EQ(Find(type_url::kCluster, "backend"), nullptr);
  auto rejections = source_->rejections();
  ASSERT_EQ(rejections.size(), 2u);
  bool saw_duplicate = false, saw_dangling = false;
  for (const Rejection& r : rejections) {
    saw_duplicate |= r.message.find("duplicate: already defined at") != std::string::npos;
    saw_dangling |=
        r.message.find("ClusterLoadAssignment \"backend\" does not exist") != std::string::npos;
  }
  EXPECT_TRUE(saw_duplicate);
  EXPECT_TRUE(saw_dangling);
}

TEST_F(XdsDirectoryTest, DeletedFilesRemoveTheirResourcesAndUnchangedInputPublishesNothing) {
  Write("cluster.yaml", kCluster);
  Write("endpoints.yaml", kEndpoints);
  ASSERT_TRUE(source_->Reload().ok());
  ASSERT_TRUE(source_->Reload().ok());
  EXPECT_EQ(published_.size(), 1u);
  std::filesystem::remove(dir_ / "cluster.yaml");
  ASSERT_TRUE(source_->Reload().ok());
  EXPECT_EQ(published_.size(), 2u);
  EXPECT_EQ(Find(type_url::kCluster, "backend"), nullptr);
  EXPECT_NE(Find(type_url::kClusterLoadAssignment, "backend"), nullptr);
}

}  // namespace
}  // namespace holdfast
