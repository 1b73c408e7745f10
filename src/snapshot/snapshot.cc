#include "src/snapshot/snapshot.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/snapshot/references.h"

namespace holdfast {
namespace {

const ResourceMap& EmptyMap() {
  static const ResourceMap* empty = new ResourceMap();
  return *empty;
}

// One line of a version's digest input.
void AppendNameVersion(absl::string_view name, const Resource& resource, std::string* input) {
  absl::StrAppend(input, name, "\t", resource.version(), "\n");
}

// VersionOf over the map's resources, in name order.
std::string VersionOfMap(const ResourceMap& resources) {
  std::string input;
  input.reserve(resources.size() * 48);
  for (const auto& [name, r] : resources) AppendNameVersion(name, *r, &input);
  return ContentDigest(input);
}

// Whether `name` is in `map`, looking first just after the last name found
// (`cursor`): references are mostly met in the order of what they name
// (clusters and their load assignments, listeners and their routes), so
// most lookups cost a comparison or two instead of a search.
bool ContainsNear(const ResourceMap& map, const std::string& name,
                  ResourceMap::const_iterator& cursor) {
  for (int step = 0; step < 2 && cursor != map.end(); ++step, ++cursor) {
    if (cursor->first == name) return true;
  }
  cursor = map.find(name);
  return cursor != map.end();
}

}  // namespace

std::string VersionOf(const std::vector<ResourcePtr>& resources) {
  std::string input;
  input.reserve(resources.size() * 48);
  for (const ResourcePtr& r : resources) AppendNameVersion(r->name(), *r, &input);
  return ContentDigest(input);
}

absl::Status Snapshot::Index(std::vector<ResourcePtr> resources) {
  size_ = resources.size();
  // The few types met so far (resources of two types often alternate).
  std::vector<std::pair<absl::string_view, ResourceMap*>> types;
  for (ResourcePtr& resource : resources) {
    const absl::string_view type = resource->type_url();  // lives in the map
    auto known = std::find_if(types.begin(), types.end(),
                              [&](const auto& entry) { return entry.first == type; });
    if (known == types.end()) {
      types.emplace_back(type, &by_type_[std::string(type)]);
      known = std::prev(types.end());
    }
    ResourceMap* of_type = known->second;
    const std::string& name = resource->name();
    // The translator emits runs of one type in name order: one comparison
    // places those at the end.
    if (of_type->empty() || of_type->rbegin()->first < name) {
      of_type->emplace_hint(of_type->end(), name, std::move(resource));
    } else if (!of_type->emplace(name, resource).second) {
      return absl::InvalidArgumentError(absl::StrCat("two resources of type ", TypeNameOf(type),
                                                     " are named \"", name, "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status Snapshot::CheckReferences() const {
  std::vector<std::string> dangling;
  for (const auto& [type, of_type] : by_type_) {
    absl::string_view target_type;
    const ResourceMap* targets = nullptr;
    ResourceMap::const_iterator cursor;
    for (const auto& [name, resource] : of_type) {
      for (const ResourceRef& ref : resource->references()) {
        if (targets == nullptr || ref.type_url != target_type) {
          target_type = ref.type_url;
          targets = &Resources(ref.type_url);
          cursor = targets->begin();
        }
        if (!ContainsNear(*targets, ref.name, cursor)) {
          dangling.push_back(absl::StrCat(TypeNameOf(type), " \"", name, "\" field ",
                                          ref.field_path, " names ", TypeNameOf(ref.type_url),
                                          " \"", ref.name, "\", which is not in the snapshot"));
        }
      }
    }
  }
  if (dangling.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("inconsistent snapshot: ", absl::StrJoin(dangling, "; ")));
}

void Snapshot::ComputeVersions() {
  std::string all_versions;
  for (const auto& [type, of_type] : by_type_) {
    std::string version = VersionOfMap(of_type);
    absl::StrAppend(&all_versions, type, "\t", version, "\n");
    type_versions_.emplace_hint(type_versions_.end(), type, std::move(version));
  }
  // Without policies the version is what it always was: replicas of
  // different releases agree on it.
  if (!rollouts_.empty()) {
    absl::StrAppend(&all_versions, "rollouts\t", EncodeRollouts(rollouts_), "\n");
  }
  version_ = ContentDigest(all_versions);
}

absl::StatusOr<SnapshotPtr> Snapshot::Build(std::vector<ResourcePtr> resources, absl::Time created,
                                            ConfiguredRollouts rollouts) {
  auto snapshot = std::shared_ptr<Snapshot>(new Snapshot());
  snapshot->created_ = created;
  snapshot->rollouts_ = std::move(rollouts);
  if (absl::Status indexed = snapshot->Index(std::move(resources)); !indexed.ok()) return indexed;
  if (absl::Status consistent = snapshot->CheckReferences(); !consistent.ok()) return consistent;
  snapshot->ComputeVersions();
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
