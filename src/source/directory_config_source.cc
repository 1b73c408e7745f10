#include "src/source/directory_config_source.h"

#include <utility>
#include <vector>

#include "src/common/log.h"
#include "src/common/parallel_for.h"

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
    for (auto it = files_.lower_bound(prefix);
         it != files_.end() && it->first.starts_with(prefix); ++it) {
      listing.files.emplace(it->first, it->second.fingerprint);
    }
  }
  return listing;
}

absl::Status DirectoryConfigSource::Apply(const DirectoryListing& scanned) {
  std::optional<DirectoryListing> kept;  // mostly none: no copy of the listing
  if (!scanned.unreadable.empty()) kept = KeepUnreadable(scanned);
  const DirectoryListing& scan = kept.has_value() ? *kept : scanned;
  const bool files_changed = FollowFiles(scan.files);
  if (applied_once_ && !files_changed && scan.unreadable == unreadable_ &&
      scan.skipped == skipped_ && !pipeline_.overlay_pending()) {
    return absl::OkStatus();
  }
  unreadable_ = scan.unreadable;
  skipped_ = scan.skipped;
  applied_once_ = true;
  StatusMap file_statuses = ListingStatuses(scan);
  assembler_.AddFileStatuses(file_statuses);
  absl::Status applied = pipeline_.Apply(assembler_.Assemble(), file_statuses);
  read_once_ = true;
  return applied;
}

bool DirectoryConfigSource::FollowFiles(const std::map<std::string, FileFingerprint>& listed) {
  bool forgotten = false;
  std::vector<std::pair<ReadFiles::iterator, FileFingerprint>> to_read;
  auto known = files_.begin();
  for (const auto& [path, fingerprint] : listed) {
    for (; known != files_.end() && known->first < path; forgotten = true) known = Forget(known);
    if (known == files_.end() || known->first != path) {
      known = files_.emplace_hint(known, path, ReadFile{});
      to_read.emplace_back(known, fingerprint);
    } else if (known->second.fingerprint != fingerprint) {
      to_read.emplace_back(known, fingerprint);
    }
    ++known;
  }
  for (; known != files_.end(); forgotten = true) known = Forget(known);
  // Files decode independently, and at start there may be 10,000 of them:
  // seconds on one core. A few changed ones are not worth a thread.
  const int threads = ThreadsFor(to_read.size(), options_.translator.threads);
  std::vector<DecodedFile> read(to_read.size());
  ParallelFor(to_read.size(), threads,
              [&](size_t i) { read[i] = ReadAndDecode(to_read[i].first->first); });
  for (size_t i = 0; i < to_read.size(); ++i) {
    Keep(to_read[i].first->first, to_read[i].second, std::move(read[i]), to_read[i].first->second);
  }
  return forgotten || !to_read.empty();
}

DirectoryConfigSource::ReadFiles::iterator DirectoryConfigSource::Forget(
    ReadFiles::iterator file) {
  assembler_.RemoveFile(file->first);
  return files_.erase(file);
}

void DirectoryConfigSource::Keep(const std::string& path, const FileFingerprint& fingerprint,
                                 DecodedFile read, ReadFile& file) {
  if (!read.syntax_error) {
    file.readable_before.reset();
  } else if (file.read_ok) {
    file.readable_before = std::move(file.read);
  }  // else: unreadable again, what was readable before stays
  file.read_ok = !read.syntax_error;
  file.read = std::move(read);
  file.fingerprint = fingerprint;
  assembler_.SetFile(path, file.read, file.readable_before ? &*file.readable_before : nullptr);
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
