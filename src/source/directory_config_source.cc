#include "src/source/directory_config_source.h"

#include "src/common/log.h"

namespace holdfast {
namespace {
const std::vector<std::string> kExtensions = {".yaml", ".yml"};
}  // namespace

DirectoryConfigSource::DirectoryConfigSource(Options options, const Clock& clock,
                                             MetricsRegistry* metrics,
                                             std::function<void(SnapshotPtr)> publish)
    : options_(std::move(options)),
      pipeline_(options_.directory, options_.translator, clock, metrics, std::move(publish)) {}

DirectoryConfigSource::~DirectoryConfigSource() { Stop(); }

absl::Status DirectoryConfigSource::Reload() {
  absl::StatusOr<DirectoryListing> scan = ScanDirectory(options_.directory, kExtensions);
  if (!scan.ok()) return scan.status();
  absl::MutexLock lock(&reload_mu_);
  return Apply(*scan);
}

DirectoryListing DirectoryConfigSource::KeepUnreadable(const DirectoryListing& scan) const {
  DirectoryListing listing = scan;
  for (const auto& [dir, why] : scan.unreadable) {
    const std::string prefix = dir + "/";
    for (auto it = applied_.files.lower_bound(prefix);
         it != applied_.files.end() && it->first.starts_with(prefix); ++it) {
      listing.files.insert(*it);
    }
  }
  return listing;
}

absl::Status DirectoryConfigSource::Apply(const DirectoryListing& scanned) {
  const DirectoryListing scan = KeepUnreadable(scanned);
  if (applied_once_ && scan == applied_ && !pipeline_.overlay_pending()) return absl::OkStatus();
  std::map<std::string, DecodedFile> files;
  for (const auto& [path, fingerprint] : scan.files) {
    auto previous = applied_.files.find(path);
    if (previous != applied_.files.end() && previous->second == fingerprint &&
        files_.contains(path)) {
      files.emplace(path, files_.at(path));
      continue;
    }
    files.emplace(path, ReadAndDecode(path));
    if (!files.at(path).syntax_error) last_readable_[path] = files.at(path);
  }
  for (auto it = last_readable_.begin(); it != last_readable_.end();) {
    it = scan.files.contains(it->first) ? std::next(it) : last_readable_.erase(it);
  }
  files_ = std::move(files);
  applied_ = scan;
  applied_once_ = true;
  StatusMap file_statuses = ListingStatuses(scan);
  TranslationInput input = AssembleInput(files_, last_readable_, &file_statuses);
  absl::Status applied = pipeline_.Apply(input, file_statuses);
  read_once_ = true;
  return applied;
}

void DirectoryConfigSource::Start() {
  follower_.Start({.directory = options_.directory,
                   .extensions = kExtensions,
                   .poll_interval = options_.poll_interval,
                   .confirm_delay = options_.confirm_delay},
                  [this](const DirectoryFollower::Listing& listing) {
                    absl::MutexLock lock(&reload_mu_);
                    (void)Apply(listing);
                  });
}

void DirectoryConfigSource::Stop() { follower_.Stop(); }

void DirectoryConfigSource::SetStatusOverlay(StatusMap overlay) {
  pipeline_.SetOverlay(std::move(overlay));
  follower_.Wake();  // its next listing applies again
}

SourceHealth DirectoryConfigSource::health() const {
  SourceHealth health;
  health.connected = true;
  health.last_contact = absl::Now();  // the directory is always at hand
  health.synced_once = read_once_.load();
  return health;
}

}  // namespace holdfast
