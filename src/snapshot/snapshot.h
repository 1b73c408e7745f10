#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/snapshot/resource.h"
#include "src/snapshot/resource_map.h"
#include "src/snapshot/rollout_policy.h"

namespace holdfast {

// An immutable, complete set of resources served to one node group.
//
// A snapshot is only ever built consistent: every route configuration a
// listener names and every load assignment an EDS cluster names is in it.
// Its version is a digest of its content, so replicas that hold the same
// resources report the same version and a proxy moving between them is not
// re-sent anything.
class Snapshot {
 public:
  // Builds a snapshot. Fails if two resources share a type and name, or if a
  // reference dangles (the error lists every dangling reference). `rollouts`
  // are the configuration's rollout policies, which travel with it (to the
  // rollout controllers, and to disk) and are part of its version.
  //
  // `previous`, the snapshot built before (optional), only saves work: a
  // type whose resources all have the same versions as there is shared
  // with it, one with a few changed is patched from it, and only the
  // references of what changed are looked up while no name they could
  // refer to has gone. The result is the same without it.
  static absl::StatusOr<std::shared_ptr<const Snapshot>> Build(std::vector<ResourcePtr> resources,
                                                               absl::Time created,
                                                               ConfiguredRollouts rollouts = {},
                                                               const Snapshot* previous = nullptr);

  const std::string& version() const { return version_; }
  absl::Time created() const { return created_; }
  // Resources of one type, by name; empty when the type has none.
  const ResourceMap& Resources(absl::string_view type_url) const;
  // Digest of the names and versions of one type's resources (a
  // VersionSum's: not VersionOf them).
  std::string TypeVersion(absl::string_view type_url) const;
  // Type URLs that have at least one resource, sorted.
  std::vector<std::string> TypeUrls() const;
  size_t size() const { return size_; }
  const ConfiguredRollouts& rollouts() const { return rollouts_; }

 private:
  // The resources of one type, immutable, shared by consecutive snapshots
  // while none of them changes.
  struct OfType {
    ResourceMap resources;
    std::string version;            // its resources' VersionSum digest
    std::set<std::string> targets;  // the types its resources refer to
  };
  using OfTypePtr = std::shared_ptr<const OfType>;

  // How a type's resources differ from the snapshot before's; a type
  // shared with it has none.
  struct TypeChange {
    bool rebuilt = false;  // made whole: new, or not patchable
    bool names_removed = false;
    std::vector<ResourcePtr> added;  // when patched: the entries new or changed
  };
  using Changes = std::map<std::string, TypeChange, std::less<>>;

  Snapshot() = default;
  // Build's steps. Index files the resources by type and name (failing on a
  // duplicate name) and returns how each type changed since `previous`.
  absl::StatusOr<Changes> Index(std::vector<ResourcePtr> resources, const Snapshot* previous);
  static absl::StatusOr<OfTypePtr> MakeOfType(std::vector<ResourcePtr> resources);
  static OfTypePtr PatchedOfType(const OfType& before, ResourceMap::Patch& patch);
  absl::Status CheckReferences(const Changes& changes) const;
  void ComputeVersion();

  std::string version_;
  absl::Time created_;
  size_t size_ = 0;
  ConfiguredRollouts rollouts_;
  std::map<std::string, OfTypePtr, std::less<>> by_type_;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

// Digest over (name, version) pairs, in the order given. Used for the
// version_info of a response that holds exactly these resources.
std::string VersionOf(const std::vector<ResourcePtr>& resources);

}  // namespace holdfast
