#include "src/cli/fleet_commands.h"

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

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

}  // namespace holdfast
