#include "src/snapshot/snapshot.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/snapshot/references.h"

namespace holdfast {
namespace {

const ResourceMap& EmptyMap() {
  static const ResourceMap* empty = new ResourceMap();
  return *empty;
}

}  // namespace

std::string VersionOf(const std::vector<ResourcePtr>& resources) {
  std::string input;
  input.reserve(resources.size() * 48);
  for (const ResourcePtr& r : resources) absl::StrAppend(&input, r->name(), "\t", r->version(), "\n");
  return ContentDigest(input);
}

absl::StatusOr<SnapshotPtr> Snapshot::Build(std::vector<ResourcePtr> resources, absl::Time created,
                                            ConfiguredRollouts rollouts) {
  auto snapshot = std::shared_ptr<Snapshot>(new Snapshot());
  snapshot->created_ = created;
  snapshot->rollouts_ = std::move(rollouts);
  snapshot->size_ = resources.size();
  for (ResourcePtr& resource : resources) {
    ResourceMap& of_type = snapshot->by_type_[resource->type_url()];
    auto [slot, added] = of_type.emplace(resource->name(), resource);
    if (!added) {
      return absl::InvalidArgumentError(absl::StrCat("two resources of type ",
                                                     TypeNameOf(resource->type_url()),
                                                     " are named \"", resource->name(), "\""));
    }
  }

  std::vector<std::string> dangling;
  for (const auto& [type, of_type] : snapshot->by_type_) {
    for (const auto& [name, resource] : of_type) {
      for (const ResourceRef& ref : resource->references()) {
        if (!snapshot->Resources(ref.type_url).contains(ref.name)) {
          dangling.push_back(absl::StrCat(TypeNameOf(type), " \"", name, "\" field ",
                                          ref.field_path, " names ", TypeNameOf(ref.type_url),
                                          " \"", ref.name, "\", which is not in the snapshot"));
        }
      }
    }
  }
  if (!dangling.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("inconsistent snapshot: ", absl::StrJoin(dangling, "; ")));
  }

  std::string all_versions;
  for (const auto& [type, of_type] : snapshot->by_type_) {
    std::vector<ResourcePtr> list;
    list.reserve(of_type.size());
    for (const auto& [name, resource] : of_type) list.push_back(resource);
    std::string version = VersionOf(list);
    absl::StrAppend(&all_versions, type, "\t", version, "\n");
    snapshot->type_versions_.emplace(type, std::move(version));
  }
  // Without policies the version is what it always was: replicas of
  // different releases agree on it.
  if (!snapshot->rollouts_.empty()) {
    absl::StrAppend(&all_versions, "rollouts\t", EncodeRollouts(snapshot->rollouts_), "\n");
  }
  snapshot->version_ = ContentDigest(all_versions);
  return snapshot;
}

const ResourceMap& Snapshot::Resources(absl::string_view type_url) const {
  auto it = by_type_.find(type_url);
  return it == by_type_.end() ? EmptyMap() : it->second;
}

std::string Snapshot::TypeVersion(absl::string_view type_url) const {
  auto it = type_versions_.find(type_url);
  return it == type_versions_.end() ? VersionOf({}) : it->second;
}

std::vector<std::string> Snapshot::TypeUrls() const {
  std::vector<std::string> urls;
  for (const auto& [type, of_type] : by_type_) urls.push_back(type);
  return urls;
}

}  // namespace holdfast
