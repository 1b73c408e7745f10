#include "src/cli/resource_diff.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/cli/fleet_report.h"

namespace holdfast {
namespace {

// Beyond this many line pairs a resource is not diffed line by line.
constexpr size_t kMaxDiffCells = 4'000'000;

struct Edit {
  char op;  // ' ', '-', '+'
  std::string line;
};

std::vector<Edit> Edits(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // Longest common subsequence, then walk it.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::vector<Edit> edits;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      edits.push_back({' ', a[i++]});
      ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      edits.push_back({'-', a[i++]});  // removals before additions, as diff -u
    } else {
      edits.push_back({'+', b[j++]});
    }
  }
  return edits;
}

}  // namespace

std::string LineDiff(const std::string& before, const std::string& after, int context) {
  std::vector<std::string> a = absl::StrSplit(before, '\n');
  std::vector<std::string> b = absl::StrSplit(after, '\n');
  if (a.size() * b.size() > kMaxDiffCells) return "(too large to diff line by line)\n";
  std::vector<Edit> edits = Edits(a, b);
  // Keep the lines within `context` of a change.
  std::vector<bool> keep(edits.size(), false);
  for (size_t k = 0; k < edits.size(); ++k) {
    if (edits[k].op == ' ') continue;
    const size_t from = k >= static_cast<size_t>(context) ? k - context : 0;
    const size_t to = std::min(edits.size(), k + context + 1);
    for (size_t x = from; x < to; ++x) keep[x] = true;
  }
  std::string out;
  bool gap = false;
  for (size_t k = 0; k < edits.size(); ++k) {
    if (!keep[k]) {
      gap = true;
      continue;
    }
    if (gap && !out.empty()) absl::StrAppend(&out, "@@\n");
    gap = false;
    absl::StrAppend(&out, std::string(1, edits[k].op), edits[k].line, "\n");
  }
  return out;
}

ServedResources ServedResourcesOf(const nlohmann::json& page, const std::string& group) {
  ServedResources out;
  if (!page.is_object() || !page.contains("groups") || !page["groups"].contains(group)) return out;
  const nlohmann::json& snapshot = page["groups"][group];
  if (!snapshot.contains("types") || !snapshot["types"].is_object()) return out;
  for (const auto& [type_url, entry] : snapshot["types"].items()) {
    if (!entry.contains("resources") || !entry["resources"].is_array()) continue;
    for (const nlohmann::json& resource : entry["resources"]) {
      if (!resource.is_object() || !resource.contains("name")) continue;
      out[{type_url, resource["name"].get<std::string>()}] = {
          resource.value("version", ""), resource.value("resource", nlohmann::json())};
    }
  }
  return out;
}

std::vector<ResourceChange> DiffResources(const ServedResources& before,
                                          const ServedResources& after) {
  std::vector<ResourceChange> changes;
  for (const auto& [key, resource] : after) {
    auto old = before.find(key);
    if (old == before.end()) {
      changes.push_back({ResourceChange::Kind::kAdded, key.first, key.second, ""});
    } else if (old->second.version != resource.version) {
      changes.push_back({ResourceChange::Kind::kChanged, key.first, key.second,
                         LineDiff(old->second.body.dump(2), resource.body.dump(2))});
    }
  }
  for (const auto& [key, resource] : before) {
    if (!after.contains(key)) {
      changes.push_back({ResourceChange::Kind::kRemoved, key.first, key.second, ""});
    }
  }
  std::sort(changes.begin(), changes.end(), [](const ResourceChange& x, const ResourceChange& y) {
    return std::tie(x.type_url, x.name) < std::tie(y.type_url, y.name);
  });
  return changes;
}

std::string RenderChanges(const std::vector<ResourceChange>& changes) {
  std::string out;
  int added = 0, changed = 0, removed = 0;
  for (const ResourceChange& change : changes) {
    const std::string what = absl::StrCat(ShortTypeName(change.type_url), " ", change.name);
    switch (change.kind) {
      case ResourceChange::Kind::kAdded:
        ++added;
        absl::StrAppend(&out, "+ ", what, "\n");
        break;
      case ResourceChange::Kind::kRemoved:
        ++removed;
        absl::StrAppend(&out, "- ", what, "\n");
        break;
      case ResourceChange::Kind::kChanged:
        ++changed;
        absl::StrAppend(&out, "~ ", what, "\n");
        if (change.diff.empty()) {
          absl::StrAppend(&out, "    (only redacted fields differ)\n");
        }
        for (absl::string_view line : absl::StrSplit(change.diff, '\n', absl::SkipEmpty())) {
          absl::StrAppend(&out, "    ", line, "\n");
        }
        break;
    }
  }
  absl::StrAppend(&out, added, " added, ", changed, " changed, ", removed, " removed\n");
  return out;
}

}  // namespace holdfast
