#include "src/app/diff_command.h"

#include <cstdio>

#include "src/admin/admin_server.h"
#include "src/app/config_paths.h"
#include "src/cli/resource_diff.h"

namespace holdfast {
namespace {

int Fail(absl::string_view message) {
  std::fprintf(stderr, "holdfast: %s\n", std::string(message).c_str());
  return 2;
}

ServedResources LocalResources(const Snapshot& snapshot) {
  ServedResources out;
  for (const std::string& type_url : snapshot.TypeUrls()) {
    for (const auto& [name, resource] : snapshot.Resources(type_url)) {
      out[{type_url, name}] = {resource->version(), resource->message() != nullptr
                                                        ? RedactedMessageJson(*resource->message())
                                                        : nlohmann::json()};
    }
  }
  return out;
}

// Objects that would be Rejected keep their last accepted version in serve;
// here they have none, so their resources read as removed: say so.
void NoteRejected(const StatusMap& statuses) {
  for (const auto& [key, status] : statuses) {
    if (status.state != StatusState::kRejected) continue;
    std::fprintf(stderr, "note: %s would be Rejected (serve keeps its last accepted version):\n",
                 key.ToString().c_str());
    for (const FieldError& reason : status.reasons) {
      std::fprintf(stderr, "  %s\n", reason.ToString().c_str());
    }
  }
}

}  // namespace

int RunDiff(const DiffOptions& options) {
  absl::StatusOr<ConfigPaths> read = ReadConfigPaths(options.paths);
  if (!read.ok()) return Fail(read.status().message());
  for (const std::string& skipped : read->skipped) std::fprintf(stderr, "%s\n", skipped.c_str());
  absl::StatusOr<TranslatedConfig> translated = TranslateConfig(read->files);
  if (!translated.ok()) return Fail(translated.status().message());
  NoteRejected(translated->statuses);

  absl::StatusOr<AdminClient> client = AdminClient::Create(options.admin);
  if (!client.ok()) return Fail(client.status().message());
  absl::StatusOr<nlohmann::json> page = client->GetJson("/debug/snapshot");
  if (!page.ok()) return Fail(page.status().message());
  if (!(*page).contains("groups") || !(*page)["groups"].contains(options.group)) {
    std::fprintf(stderr, "note: %s serves no snapshot to group %s yet\n", client->url().c_str(),
                 options.group.c_str());
  }
  std::vector<ResourceChange> changes =
      DiffResources(ServedResourcesOf(*page, options.group), LocalResources(*translated->snapshot));
  std::printf("%s", RenderChanges(changes).c_str());
  return changes.empty() ? 0 : 1;
}

}  // namespace holdfast
