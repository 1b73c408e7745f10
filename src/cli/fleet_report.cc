#include "src/cli/fleet_report.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace holdfast {
namespace {

std::string Str(const nlohmann::json& doc, const char* key) {
  return doc.is_object() && doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>()
                                                                      : "";
}

double Num(const nlohmann::json& doc, const char* key) {
  return doc.is_object() && doc.contains(key) && doc[key].is_number() ? doc[key].get<double>() : 0;
}

bool Flag(const nlohmann::json& doc, const char* key) {
  return doc.is_object() && doc.contains(key) && doc[key].is_boolean() && doc[key].get<bool>();
}

const nlohmann::json& List(const nlohmann::json& doc, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  return doc.is_object() && doc.contains(key) && doc[key].is_array() ? doc[key] : empty;
}

// Adds at most kMaxAttention lines of one kind, then how many more.
class Attention {
 public:
  void Add(const std::string& kind, std::string line) {
    if (++counts_[kind] <= kMaxAttention) lines_.push_back(std::move(line));
  }
  nlohmann::json ToJson() const {
    nlohmann::json out = lines_;
    for (const auto& [kind, count] : counts_) {
      if (count > kMaxAttention)
        out.push_back(absl::StrCat("... and ", count - kMaxAttention, " more ", kind));
    }
    return out;
  }

 private:
  std::vector<std::string> lines_;
  std::map<std::string, size_t> counts_;
};

void NoteStore(const nlohmann::json& store, Attention& attention) {
  if (!store.is_object()) return;
  if (!Str(store, "access_error").empty()) {
    attention.Add("store",
                  absl::StrCat("the store refuses this replica: ", Str(store, "access_error")));
  } else if (!Flag(store, "connected")) {
    attention.Add("store",
                  absl::StrFormat("store unreachable for %.0fs: %s",
                                  Num(store, "unreachable_seconds"), Str(store, "last_error")));
  }
  if (Str(store, "serving") == "persisted") {
    attention.Add("store", "serving the persisted last-known-good snapshot, not live config");
  }
}

nlohmann::json CountProxies(const nlohmann::json& page, Attention& attention) {
  nlohmann::json counts = {{"total", 0}, {"synced", 0}, {"pending", 0}, {"nacking", 0}};
  for (const nlohmann::json& proxy : List(page, "proxies")) {
    counts["total"] = counts["total"].get<int>() + 1;
    const std::string state = Str(proxy, "state");
    if (counts.contains(state)) counts[state] = counts[state].get<int>() + 1;
    if (state != "nacking") continue;
    for (const auto& [type, progress] : proxy["types"].items()) {
      if (!progress.contains("nack") || !progress["nack"].is_object()) continue;
      attention.Add(
          "NACKing proxies",
          absl::StrCat("proxy ", Str(proxy, "node_id"), " NACKs ", ShortTypeName(type), " version ",
                       Str(progress["nack"], "version"), ": ", Str(progress["nack"], "error")));
    }
  }
  return counts;
}

nlohmann::json CountObjects(const nlohmann::json& page, Attention& attention) {
  std::map<std::string, int> by_status;
  int total = 0;
  for (const nlohmann::json& object : List(page, "objects")) {
    ++total;
    const std::string status = Str(object, "status");
    ++by_status[status];
    if (status != "Rejected") continue;
    std::string line = absl::StrCat("Rejected ", Str(object, "kind"), " ", Str(object, "namespace"),
                                    "/", Str(object, "name"));
    if (!Str(object, "location").empty())
      absl::StrAppend(&line, " (", Str(object, "location"), ")");
    for (const nlohmann::json& reason : List(object, "reasons")) {
      absl::StrAppend(&line, "; ", Str(reason, "field"));
      const std::string at = Str(reason, "location");
      if (!at.empty() && at != Str(object, "location")) absl::StrAppend(&line, " (", at, ")");
      absl::StrAppend(&line, ": ", Str(reason, "message"));
    }
    attention.Add("Rejected objects", std::move(line));
  }
  return {{"total", total}, {"by_status", by_status}};
}

nlohmann::json Snapshots(const nlohmann::json& page) {
  nlohmann::json out = nlohmann::json::object();
  if (!page.is_object() || !page.contains("groups") || !page["groups"].is_object()) return out;
  for (const auto& [group, snapshot] : page["groups"].items()) {
    size_t resources = 0;
    if (snapshot.contains("types") && snapshot["types"].is_object()) {
      for (const auto& [type, entry] : snapshot["types"].items()) {
        resources += List(entry, "resources").size();
      }
    }
    out[group] = {{"created", Str(snapshot, "created")}, {"resources", resources}};
  }
  return out;
}

std::string LeaderLine(const nlohmann::json& leader) {
  if (!leader.is_object()) return "no election (this replica serves alone)";
  const std::string term = absl::StrFormat("%.0f", Num(leader, "term"));
  if (Flag(leader, "is_leader")) return absl::StrCat(Str(leader, "replica"), " leads, term ", term);
  if (Str(leader, "leader").empty())
    return absl::StrCat("no leader seen; this is ", Str(leader, "replica"));
  return absl::StrCat(Str(leader, "leader"), " leads, term ", term, "; this is ",
                      Str(leader, "replica"), ", a follower");
}

std::string StoreLine(const nlohmann::json& store) {
  if (!store.is_object()) return "none";
  std::string line = Flag(store, "connected") ? std::string("connected")
                                              : absl::StrFormat("unreachable for %.0fs",
                                                                Num(store, "unreachable_seconds"));
  if (!Str(store, "serving").empty()) absl::StrAppend(&line, ", serving ", Str(store, "serving"));
  return line;
}

}  // namespace

std::string ShortTypeName(const std::string& type_url) {
  static const std::map<std::string, std::string> kNames = {
      {"envoy.config.listener.v3.Listener", "LDS"},
      {"envoy.config.route.v3.RouteConfiguration", "RDS"},
      {"envoy.config.cluster.v3.Cluster", "CDS"},
      {"envoy.config.endpoint.v3.ClusterLoadAssignment", "EDS"},
      {"envoy.extensions.transport_sockets.tls.v3.Secret", "SDS"},
      {"envoy.service.runtime.v3.Runtime", "RTDS"}};
  const std::string name = type_url.substr(type_url.rfind('/') + 1);
  auto it = kNames.find(name);
  return it == kNames.end() ? name : it->second;
}

nlohmann::json SummarizeReplica(const AdminPages& pages) {
  Attention attention;
  if (!pages.ready) attention.Add("readiness", pages.readiness);
  NoteStore(pages.store, attention);
  nlohmann::json proxies = CountProxies(pages.proxies, attention);
  nlohmann::json objects = CountObjects(pages.status, attention);
  return {
      {"admin", pages.admin_url}, {"ready", pages.ready}, {"readiness", pages.readiness},
      {"leader", pages.leader},   {"store", pages.store}, {"snapshots", Snapshots(pages.snapshots)},
      {"proxies", proxies},       {"objects", objects},   {"attention", attention.ToJson()}};
}

std::string RenderSummary(const nlohmann::json& summary) {
  std::string out;
  auto row = [&out](absl::string_view label, absl::string_view value) {
    absl::StrAppend(&out, absl::StrFormat("%-10s %s\n", label, value));
  };
  row("admin", Str(summary, "admin"));
  row("replica", Str(summary, "readiness"));
  row("leader", LeaderLine(summary["leader"]));
  row("store", StoreLine(summary["store"]));
  for (const auto& [group, snapshot] : summary["snapshots"].items()) {
    row("snapshot", absl::StrFormat("%s: %.0f resources, published %s", group,
                                    Num(snapshot, "resources"), Str(snapshot, "created")));
  }
  const nlohmann::json& p = summary["proxies"];
  row("proxies", absl::StrFormat("%.0f: %.0f synced, %.0f pending, %.0f nacking", Num(p, "total"),
                                 Num(p, "synced"), Num(p, "pending"), Num(p, "nacking")));
  std::vector<std::string> statuses;
  for (const auto& [status, count] : summary["objects"]["by_status"].items()) {
    statuses.push_back(absl::StrCat(count.get<int>(), " ", status));
  }
  row("objects", absl::StrCat(Num(summary["objects"], "total"), statuses.empty() ? "" : ": ",
                              absl::StrJoin(statuses, ", ")));
  const nlohmann::json& attention = summary["attention"];
  if (attention.empty()) {
    absl::StrAppend(&out, "nothing needs attention\n");
  } else {
    absl::StrAppend(&out, "needs attention:\n");
    for (const nlohmann::json& line : attention)
      absl::StrAppend(&out, "  ", line.get<std::string>(), "\n");
  }
  return out;
}

std::vector<nlohmann::json> SelectProxies(const nlohmann::json& page, const ProxyFilter& filter) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& proxy : List(page, "proxies")) {
    const std::string state = Str(proxy, "state");
    if (filter.nacking && state != "nacking") continue;
    if (filter.stale && state == "synced") continue;
    if (!filter.node.empty() && Str(proxy, "node_id") != filter.node) continue;
    out.push_back(proxy);
  }
  // NACKing first, then pending, then the rest; by node within.
  auto rank = [](const nlohmann::json& p) {
    const std::string state = Str(p, "state");
    return state == "nacking" ? 0 : state == "pending" ? 1 : 2;
  };
  std::stable_sort(out.begin(), out.end(), [&](const nlohmann::json& a, const nlohmann::json& b) {
    return std::make_pair(rank(a), Str(a, "node_id")) < std::make_pair(rank(b), Str(b, "node_id"));
  });
  return out;
}

std::string RenderProxyTable(const std::vector<nlohmann::json>& proxies) {
  std::string out = absl::StrFormat("%-32s %-12s %-10s %-8s %-24s %s\n", "NODE", "GROUP", "STREAM",
                                    "STATE", "CONNECTED", "ACKED");
  for (const nlohmann::json& proxy : proxies) {
    std::vector<std::string> acked;
    for (const auto& [type, progress] : proxy["types"].items()) {
      std::string version = Str(progress, "acked_version");
      acked.push_back(absl::StrCat(ShortTypeName(type), "=", version.empty() ? "-" : version));
    }
    absl::StrAppend(&out,
                    absl::StrFormat("%-32s %-12s %-10s %-8s %-24s %s\n", Str(proxy, "node_id"),
                                    Str(proxy, "group"), Str(proxy, "stream"), Str(proxy, "state"),
                                    Str(proxy, "connected_since"), absl::StrJoin(acked, " ")));
  }
  return out;
}

std::string RenderProxyDetail(const std::vector<nlohmann::json>& streams) {
  std::string out;
  for (const nlohmann::json& proxy : streams) {
    absl::StrAppend(
        &out, absl::StrFormat("node %s (group %s), stream %.0f %s from %s since %s: %s\n",
                              Str(proxy, "node_id"), Str(proxy, "group"), Num(proxy, "stream_id"),
                              Str(proxy, "stream"), Str(proxy, "peer"),
                              Str(proxy, "connected_since"), Str(proxy, "state")));
    for (const auto& [type, progress] : proxy["types"].items()) {
      absl::StrAppend(
          &out,
          absl::StrFormat(
              "  %-5s sent %s, ACKed %s at %s (%.0f responses, %.0f ACKs, %.0f NACKs)\n",
              ShortTypeName(type), Str(progress, "last_sent_version"),
              Str(progress, "acked_version"), Str(progress, "acked_at"),
              Num(progress, "responses_sent"), Num(progress, "acks"), Num(progress, "nacks")));
      if (progress.contains("nack") && progress["nack"].is_object()) {
        const nlohmann::json& nack = progress["nack"];
        absl::StrAppend(&out, absl::StrFormat("        NACKed %s at %s: %s\n", Str(nack, "version"),
                                              Str(nack, "at"), Str(nack, "error")));
      }
    }
  }
  return out;
}

}  // namespace holdfast
