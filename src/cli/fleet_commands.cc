#include "src/cli/fleet_commands.h"

#include <cstdio>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/cli/json_yaml.h"

namespace holdfast {
namespace {

constexpr int kCannotAsk = 2;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "holdfast: %s\n", std::string(status.message()).c_str());
  return kCannotAsk;
}

// A page the replica may not serve (no election, no store) reads as null.
absl::StatusOr<nlohmann::json> Optional(const AdminClient& client, const std::string& path) {
  absl::StatusOr<nlohmann::json> page = client.GetJson(path);
  if (page.status().code() == absl::StatusCode::kNotFound) return nlohmann::json();
  return page;
}

absl::StatusOr<AdminPages> ReadPages(const AdminClient& client) {
  AdminPages pages;
  pages.admin_url = client.url();
  absl::StatusOr<std::string> ready = client.Get("/readyz");
  if (!ready.ok()) return ready.status();
  pages.readiness = std::string(absl::StripAsciiWhitespace(*ready));
  pages.ready = absl::StartsWith(pages.readiness, "ready");
  struct Page {
    const char* path;
    nlohmann::json* into;
  };
  for (const Page& page :
       {Page{"/debug/leader", &pages.leader}, Page{"/debug/store", &pages.store},
        Page{"/debug/status", &pages.status}, Page{"/debug/proxies", &pages.proxies},
        Page{"/debug/snapshot?resources=false", &pages.snapshots}}) {
    absl::StatusOr<nlohmann::json> doc = Optional(client, page.path);
    if (!doc.ok()) return doc.status();
    *page.into = *std::move(doc);
  }
  return pages;
}

}  // namespace

int RunStatus(const StatusOptions& options) {
  absl::StatusOr<AdminClient> client = AdminClient::Create(options.admin);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<AdminPages> pages = ReadPages(*client);
  if (!pages.ok()) return Fail(pages.status());
  nlohmann::json summary = SummarizeReplica(*pages);
  if (options.output == "json") {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf("%s", RenderSummary(summary).c_str());
  }
  return summary["attention"].empty() ? 0 : 1;
}

int RunProxies(const ProxiesOptions& options) {
  absl::StatusOr<AdminClient> client = AdminClient::Create(options.admin);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<nlohmann::json> page = client->GetJson("/debug/proxies");
  if (!page.ok()) return Fail(page.status());
  std::vector<nlohmann::json> proxies = SelectProxies(*page, options.filter);
  if (options.output == "json") {
    std::printf("%s\n", nlohmann::json(proxies).dump(2).c_str());
  } else if (!options.filter.node.empty()) {
    std::printf("%s", RenderProxyDetail(proxies).c_str());
  } else {
    std::printf("%s", RenderProxyTable(proxies).c_str());
  }
  if (!options.filter.node.empty() && proxies.empty()) {
    std::fprintf(stderr, "holdfast: node %s is not connected to %s\n", options.filter.node.c_str(),
                 client->url().c_str());
    return 1;
  }
  return 0;
}

namespace {

// "cluster" -> the Cluster type URL; a type URL stays as it is.
std::string TypeUrlOf(const std::string& type) {
  static const std::map<std::string, std::string> kTypes = {
      {"listener", "type.googleapis.com/envoy.config.listener.v3.Listener"},
      {"route", "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"},
      {"cluster", "type.googleapis.com/envoy.config.cluster.v3.Cluster"},
      {"endpoint", "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"},
      {"secret", "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"}};
  auto it = kTypes.find(type);
  return it == kTypes.end() ? type : it->second;
}

// The resources a CSDS answer says its one node was sent.
std::vector<nlohmann::json> SentResources(const nlohmann::json& answer,
                                          const std::string& type_url) {
  std::vector<nlohmann::json> out;
  if (!answer.contains("config")) return out;
  for (const nlohmann::json& config : answer["config"]) {
    for (const nlohmann::json& entry :
         config.value("generic_xds_configs", nlohmann::json::array())) {
      if (!entry.contains("xds_config")) continue;
      if (!type_url.empty() && entry.value("type_url", "") != type_url) continue;
      out.push_back(entry["xds_config"]);
    }
  }
  return out;
}

std::vector<nlohmann::json> GroupResources(const nlohmann::json& page, const std::string& group,
                                           const std::string& type_url) {
  std::vector<nlohmann::json> out;
  if (!page.contains("groups") || !page["groups"].contains(group)) return out;
  for (const auto& [type, entry] : page["groups"][group]["types"].items()) {
    if (!type_url.empty() && type != type_url) continue;
    for (const nlohmann::json& resource : entry.value("resources", nlohmann::json::array())) {
      if (!resource.contains("resource") || resource["resource"].is_null()) continue;
      nlohmann::json shown = {{"@type", type}};
      shown.update(resource["resource"]);
      out.push_back(std::move(shown));
    }
  }
  return out;
}

}  // namespace

int RunDump(const DumpOptions& options) {
  absl::StatusOr<AdminClient> client = AdminClient::Create(options.admin);
  if (!client.ok()) return Fail(client.status());
  const std::string type_url = options.type.empty() ? "" : TypeUrlOf(options.type);
  std::vector<nlohmann::json> resources;
  if (!options.node.empty()) {
    absl::StatusOr<nlohmann::json> answer =
        client->GetJson("/debug/client_status?node=" + UrlQueryEscape(options.node));
    if (!answer.ok()) return Fail(answer.status());
    if (!answer->contains("config") || (*answer)["config"].empty()) {
      std::fprintf(stderr, "holdfast: node %s is not connected to %s\n", options.node.c_str(),
                   client->url().c_str());
      return 1;
    }
    resources = SentResources(*answer, type_url);
  } else {
    absl::StatusOr<nlohmann::json> page = client->GetJson("/debug/snapshot");
    if (!page.ok()) return Fail(page.status());
    resources = GroupResources(*page, options.group, type_url);
  }
  if (options.output == "json") {
    std::printf("%s\n", nlohmann::json(resources).dump(2).c_str());
  } else {
    for (const nlohmann::json& resource : resources) {
      std::printf("---\n%s\n", JsonToYaml(resource).c_str());
    }
  }
  if (resources.empty()) {
    std::fprintf(stderr, "holdfast: no resources match\n");
    return 1;
  }
  return 0;
}

namespace {

void PrintRollout(const nlohmann::json& rollout) {
  auto field = [&](const char* name) { return rollout.value(name, ""); };
  std::printf("stage      %s since %s\nstable     %s\n", field("stage").c_str(),
              field("since").c_str(), field("stable").c_str());
  if (!field("candidate").empty()) std::printf("candidate  %s\n", field("candidate").c_str());
  if (!field("reason").empty()) std::printf("reason     %s\n", field("reason").c_str());
  const nlohmann::json held = rollout.value("held_objects", nlohmann::json::array());
  for (size_t i = 0; held.is_array() && i < held.size(); ++i) {
    if (held[i].is_string()) {
      std::printf("%s %s\n", i == 0 ? "held on   " : "          ",
                  held[i].get<std::string>().c_str());
    }
  }
  const nlohmann::json decisions = rollout.value("decisions", nlohmann::json::object());
  if (decisions.is_object() && !decisions.value("shared_through", "").empty()) {
    std::printf("shared     through %s\n", decisions.value("shared_through", "").c_str());
    if (!decisions.value("error", "").empty()) {
      std::printf("           cannot reach it: %s\n", decisions.value("error", "").c_str());
    }
    if (!decisions.value("unshared", "").empty()) {
      std::printf("           not shared yet: the decision about %s\n",
                  decisions.value("unshared", "").c_str());
    }
  }
}

}  // namespace

namespace {

// The rollouts `page` (/debug/rollout) shows for `group`: every one when
// it is empty.
std::vector<nlohmann::json> SelectRollouts(const nlohmann::json& page, const std::string& group) {
  const nlohmann::json groups = page.value("groups", nlohmann::json::object());
  if (!group.empty()) {
    if (!groups.is_object() || !groups.contains(group)) return {};
    return {groups[group]};
  }
  std::vector<nlohmann::json> all = {page};
  for (const auto& [name, rollout] : groups.items()) all.push_back(rollout);
  return all;
}

}  // namespace

int RunRollout(const RolloutOptions& options) {
  absl::StatusOr<AdminClient> client = AdminClient::Create(options.admin);
  if (!client.ok()) return Fail(client.status());
  const std::string group_path = options.group.empty() ? "" : "/" + options.group;
  absl::StatusOr<nlohmann::json> answer =
      options.action == "status" ? client->GetJson("/debug/rollout")
                                 : client->Act("/rollout/" + options.action + group_path);
  // Older replicas answer 404 without rollouts; newer ones say so.
  if (answer.status().code() == absl::StatusCode::kNotFound ||
      answer.status().code() == absl::StatusCode::kInternal ||
      (answer.ok() && answer->value("enabled", true) == false)) {
    return Fail(absl::FailedPreconditionError(absl::StrCat(
        client->url(), " has no staged rollout",
        options.group.empty() ? "" : " for group " + options.group,
        " (a RolloutPolicy object, or serve --rollout-canary-*, --rollout-group): ",
        answer.ok() ? answer->value("error", "") : std::string(answer.status().message()))));
  }
  if (!answer.ok()) return Fail(answer.status());
  const std::vector<nlohmann::json> rollouts = options.action == "status"
                                                   ? SelectRollouts(*answer, options.group)
                                                   : std::vector{(*answer)["rollout"]};
  if (rollouts.empty()) {
    return Fail(absl::NotFoundError(absl::StrCat(
        "node group ", options.group,
        " has no rollout of its own (a RolloutPolicy with nodeGroup, or --rollout-group)")));
  }
  if (options.output == "json") {
    std::printf("%s\n", answer->dump(2).c_str());
  } else {
    for (size_t i = 0; i < rollouts.size(); ++i) {
      const std::string group = rollouts[i].value("group", "");
      if (rollouts.size() > 1) {
        std::printf("%s%s\n", i == 0 ? "" : "\n",
                    group.empty() ? "node groups without a rollout of their own:"
                                  : absl::StrCat("node group ", group, ":").c_str());
      }
      PrintRollout(rollouts[i]);
    }
  }
  if (answer->value("shared", true) == false) {
    std::fprintf(stderr,
                 "applied on this replica only for now (the others follow once the store "
                 "takes it): %s\n",
                 answer->value("error", "").c_str());
  }
  if (options.action != "status") return (*answer).value("done", false) ? 0 : 1;
  for (const nlohmann::json& rollout : rollouts) {
    if (rollout.value("stage", "") == "held") return 1;
  }
  return 0;
}

}  // namespace holdfast
