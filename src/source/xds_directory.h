#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/snapshot/snapshot.h"
#include "src/source/directory_follower.h"
#include "src/source/directory_scanner.h"

namespace holdfast {

// Input that was not served as written, and why.
struct Rejection {
  std::string file;
  int line = 0;
  std::string type_url;
  std::string name;
  std::string message;
  // True when an earlier good version of the resource is served instead.
  bool serving_last_good = false;
};

// Serves raw Envoy resources from the YAML and JSON files of a directory
// tree (Envoy's file-subscription format; see envoy_file_parser.h).
//
// Every file is parsed and every resource checked against Envoy's validation
// rules on its own: a file that does not parse, a resource that fails its
// rules, a duplicate name or a reference to a missing route configuration or
// load assignment rejects only what it concerns, and a rejected resource
// keeps its last good version in service. Each consistent result that
// differs from the last is handed to `publish`.
class XdsDirectorySource {
 public:
  struct Options {
    std::string directory;
    absl::Duration poll_interval = absl::Milliseconds(250);
    // How soon a changed listing is listed again to confirm it (see
    // DirectoryFollower).
    absl::Duration confirm_delay = absl::Milliseconds(20);
  };

  XdsDirectorySource(Options options, const Clock& clock, MetricsRegistry* metrics,
                     std::function<void(SnapshotPtr)> publish);
  ~XdsDirectorySource();

  // Reads the directory now and publishes if the result changed. Fails only
  // if the directory itself cannot be listed (what was served stays). The
  // background poller applies a listing only once the next one confirms it.
  absl::Status Reload();
  // Polls the directory on a background thread until Stop().
  void Start();
  void Stop();

  std::vector<Rejection> rejections() const;

  // Parsed content of one file; defined in the .cc.
  struct FileState;

 private:
  // (type URL, name), viewing the strings of a resource that every map
  // below holds for as long as the key: building keys of 2,000 resources
  // per reload as string copies was most of assembling a snapshot.
  using Key = std::pair<absl::string_view, absl::string_view>;
  static Key KeyOf(const Resource& resource) { return {resource.type_url(), resource.name()}; }
  // Orders keys by name first: type URLs share a long prefix, and comparing
  // them first was most of a reload's map work.
  struct NameFirst {
    // One comparison of the names, not std::tie's two per member.
    bool operator()(const Key& a, const Key& b) const {
      const int by_name = a.second.compare(b.second);
      return by_name != 0 ? by_name < 0 : a.first < b.first;
    }
  };
  template <typename Value>
  using KeyMap = std::map<Key, Value, NameFirst>;
  struct Served {
    ResourcePtr resource;
    std::string file;
  };
  struct Assembly;

  // Reads what changed, then assembles, checks and publishes a snapshot.
  absl::Status Apply(const DirectoryListing& scan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Parses the files whose fingerprint changed; whether anything did.
  bool ReadChangedFiles(const DirectoryListing& scan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Every file's valid resources, duplicates and problems rejected, last
  // good versions kept for what could not be read.
  Assembly GatherCandidates(const DirectoryListing& scan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  void DropDanglingReferences(Assembly& assembly) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  absl::Status Publish(Assembly assembly) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Logs rejections that changed and keeps them for rejections().
  void Report(std::vector<Rejection> rejections) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);

  const Options options_;
  const Clock& clock_;
  std::function<void(SnapshotPtr)> publish_;
  Gauge* rejected_gauge_;
  Counter* reloads_;

  absl::Mutex reload_mu_;  // one reload at a time
  std::map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(reload_mu_);
  // The last listing's unreadable directories and skipped entries.
  DirectoryListing listing_problems_ ABSL_GUARDED_BY(reload_mu_);
  // What is served, by (type_url, name): the last good version of everything.
  KeyMap<Served> served_ ABSL_GUARDED_BY(reload_mu_);
  SnapshotPtr published_ ABSL_GUARDED_BY(reload_mu_);
  std::string last_error_summary_ ABSL_GUARDED_BY(reload_mu_);

  mutable absl::Mutex mu_;
  std::vector<Rejection> rejections_ ABSL_GUARDED_BY(mu_);

  DirectoryFollower follower_;
};

}  // namespace holdfast
