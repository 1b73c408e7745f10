#pragma once

#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/snapshot/resource.h"
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
  static absl::StatusOr<std::shared_ptr<const Snapshot>> Build(std::vector<ResourcePtr> resources,
                                                               absl::Time created,
                                                               ConfiguredRollouts rollouts = {});

  const std::string& version() const { return version_; }
  absl::Time created() const { return created_; }
  // Resources of one type, by name; empty when the type has none.
  const ResourceMap& Resources(absl::string_view type_url) const;
  // Digest of the names and versions of one type's resources.
  std::string TypeVersion(absl::string_view type_url) const;
  // Type URLs that have at least one resource, sorted.
  std::vector<std::string> TypeUrls() const;
  size_t size() const { return size_; }
  const ConfiguredRollouts& rollouts() const { return rollouts_; }

 private:
  Snapshot() = default;
  // Build's steps: resources by type and name (fails on a duplicate name),
  // the check that no reference dangles, and the versions.
  absl::Status Index(std::vector<ResourcePtr> resources);
  absl::Status CheckReferences() const;
  void ComputeVersions();

  std::string version_;
  absl::Time created_;
  size_t size_ = 0;
  ConfiguredRollouts rollouts_;
  std::map<std::string, ResourceMap, std::less<>> by_type_;
  std::map<std::string, std::string, std::less<>> type_versions_;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

// Digest over (name, version) pairs, in the order given. Used for the
// version_info of a response that holds exactly these resources.
std::string VersionOf(const std::vector<ResourcePtr>& resources);

}  // namespace holdfast
