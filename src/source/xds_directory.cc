#include "src/source/xds_directory.h"

#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/common/log.h"
#include "src/snapshot/references.h"
#include "src/source/directory_scanner.h"
#include "src/source/envoy_file_parser.h"
#include "src/translate/envoy_validation.h"

namespace holdfast {

struct XdsDirectorySource::FileState {
  struct Good {
    ResourcePtr resource;
    int line;
  };
  FileFingerprint fingerprint;
  bool unreadable = false;
  std::vector<Good> good;
  std::vector<FileProblem> problems;
};

namespace {

const std::vector<std::string> kExtensions = {".yaml", ".yml", ".json"};

bool UnderUnreadable(const std::string& path, const DirectoryListing& scan) {
  for (const auto& [dir, why] : scan.unreadable) {
    if (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/') return true;
  }
  return false;
}

std::shared_ptr<XdsDirectorySource::FileState> LoadFile(const std::string& path,
                                                        const FileFingerprint& fingerprint) {
  auto state = std::make_shared<XdsDirectorySource::FileState>();
  state->fingerprint = fingerprint;
  absl::StatusOr<std::string> contents = ReadWholeFile(path);
  if (!contents.ok()) {
    state->unreadable = true;
    state->problems.push_back({0, "", "", std::string(contents.status().message())});
    return state;
  }
  ParsedFile parsed = ParseEnvoyResources(*contents);
  state->unreadable = parsed.unreadable;
  state->problems = std::move(parsed.problems);
  for (ParsedResource& resource : parsed.resources) {
    if (absl::Status status = ValidateEnvoyResource(*resource.message); !status.ok()) {
      state->problems.push_back(
          {resource.line, resource.type_url, resource.name, std::string(status.message())});
      continue;
    }
    state->good.push_back({Resource::FromMessage(resource.name, *resource.message), resource.line});
  }
  return state;
}

}  // namespace

XdsDirectorySource::XdsDirectorySource(Options options, const Clock& clock,
                                       MetricsRegistry* metrics,
                                       std::function<void(SnapshotPtr)> publish)
    : options_(std::move(options)),
      clock_(clock),
      publish_(std::move(publish)),
      rejected_gauge_(
          metrics->GetGauge("holdfast_source_rejected_inputs",
                            "Resources or files of the config source not served as written")),
      reloads_(metrics->GetCounter("holdfast_source_reloads_total",
                                   "Times the config source was re-read after a change")) {}

XdsDirectorySource::~XdsDirectorySource() { Stop(); }

absl::Status XdsDirectorySource::Reload() {
  absl::StatusOr<DirectoryListing> scan = ScanDirectory(options_.directory, kExtensions);
  if (!scan.ok()) return scan.status();
  absl::MutexLock reload(&reload_mu_);
  return Apply(*scan);
}

// What a reload serves and rejects, built step by step.
struct XdsDirectorySource::Assembly {
  struct Candidate {
    ResourcePtr resource;
    absl::string_view file;  // a key of files_ or a file of served_
    int line = 0;
    bool last_good = false;
  };
  KeyMap<Candidate> candidates;
  std::vector<Rejection> rejections;

  // Serves the last good version of `key` if nothing else is a candidate
  // for it; whether it did.
  bool KeepLastGood(const Key& key, const KeyMap<Served>& served) {
    if (candidates.contains(key)) return false;
    auto it = served.find(key);
    if (it == served.end()) return false;
    candidates.emplace(KeyOf(*it->second.resource),
                       Candidate{it->second.resource, it->second.file, 0, true});
    return true;
  }
};

absl::Status XdsDirectorySource::Apply(const DirectoryListing& scan) {
  if (!ReadChangedFiles(scan) && published_ != nullptr) return absl::OkStatus();
  reloads_->Increment();
  Assembly assembly = GatherCandidates(scan);
  DropDanglingReferences(assembly);
  return Publish(std::move(assembly));
}

bool XdsDirectorySource::ReadChangedFiles(const DirectoryListing& scan) {
  bool changed =
      scan.unreadable != listing_problems_.unreadable || scan.skipped != listing_problems_.skipped;
  listing_problems_ = {{}, scan.unreadable, scan.skipped};
  // One ordered walk of files_ and the listing, both sorted by path: files
  // whose fingerprint changed are parsed again, files no longer listed are
  // dropped, except under a directory that cannot be listed now (unknown is
  // not gone). Rebuilding the map instead was a twentieth of a change's CPU
  // with 1,000 files.
  auto held = files_.begin();
  auto listed = scan.files.begin();
  while (held != files_.end() || listed != scan.files.end()) {
    if (listed == scan.files.end() || (held != files_.end() && held->first < listed->first)) {
      if (UnderUnreadable(held->first, scan)) {
        ++held;
      } else {
        held = files_.erase(held);  // no longer listed
        changed = true;
      }
      continue;
    }
    const auto& [path, fingerprint] = *listed++;
    if (held != files_.end() && held->first == path) {
      if (held->second->fingerprint != fingerprint) {
        held->second = LoadFile(path, fingerprint);
        changed = true;
      }
      ++held;
      continue;
    }
    held = std::next(files_.emplace_hint(held, path, LoadFile(path, fingerprint)));
    changed = true;
  }
  return changed;
}

XdsDirectorySource::Assembly XdsDirectorySource::GatherCandidates(const DirectoryListing& scan) {
  // Valid resources first, then last good versions of what could not be
  // read this time.
  Assembly assembly;
  for (const auto& [dir, why] : scan.unreadable) {
    assembly.rejections.push_back(
        {dir, 0, "", "", absl::StrCat(why, "; serving what it held before"), true});
  }
  for (const auto& [path, why] : scan.skipped)
    assembly.rejections.push_back({path, 0, "", "", why});
  for (const auto& [file, state] : files_) {
    for (const FileState::Good& good : state->good) {
      auto [slot, inserted] = assembly.candidates.emplace(
          KeyOf(*good.resource), Assembly::Candidate{good.resource, file, good.line});
      if (!inserted) {
        assembly.rejections.push_back({file, good.line, good.resource->type_url(),
                                       good.resource->name(),
                                       absl::StrCat("duplicate: already defined at ",
                                                    slot->second.file, ":", slot->second.line)});
      }
    }
  }
  for (const auto& [file, state] : files_) {
    for (const FileProblem& problem : state->problems) {
      Rejection rejection{file, problem.line, problem.type_url, problem.name, problem.message};
      if (!problem.name.empty()) {
        rejection.serving_last_good =
            assembly.KeepLastGood({problem.type_url, problem.name}, served_);
      }
      assembly.rejections.push_back(std::move(rejection));
    }
    if (state->unreadable) {
      // Nothing in the file is known: keep everything it held before.
      for (const auto& [key, served] : served_) {
        if (served.file == file) assembly.KeepLastGood(key, served_);
      }
    }
  }
  return assembly;
}

void XdsDirectorySource::DropDanglingReferences(Assembly& assembly) {
  // Drop or roll back resources whose references dangle, until none do.
  auto& candidates = assembly.candidates;
  for (bool dangling = true; dangling;) {
    dangling = false;
    // Views of the candidates' own type URLs and names: files_ and served_
    // hold every candidate's resource until the reload ends.
    absl::flat_hash_set<std::pair<absl::string_view, absl::string_view>> present;
    present.reserve(candidates.size());
    for (const auto& [key, candidate] : candidates) {
      present.insert({candidate.resource->type_url(), candidate.resource->name()});
    }
    for (auto it = candidates.begin(); it != candidates.end();) {
      std::vector<std::string> missing;
      for (const ResourceRef& ref : it->second.resource->references()) {
        if (!present.contains({ref.type_url, ref.name})) {
          missing.push_back(absl::StrCat(ref.field_path, ": ", TypeNameOf(ref.type_url), " \"",
                                         ref.name, "\" does not exist"));
        }
      }
      if (missing.empty()) {
        ++it;
        continue;
      }
      dangling = true;
      const Resource& resource = *it->second.resource;
      Rejection rejection{std::string(it->second.file), it->second.line, resource.type_url(),
                          resource.name(), absl::StrJoin(missing, "; ")};
      auto served = served_.find(it->first);
      if (!it->second.last_good && served != served_.end() &&
          served->second.resource != it->second.resource) {
        it->second = Assembly::Candidate{served->second.resource, served->second.file, 0, true};
        rejection.serving_last_good = true;
        ++it;
      } else {
        it = candidates.erase(it);
      }
      assembly.rejections.push_back(std::move(rejection));
    }
  }
}

absl::Status XdsDirectorySource::Publish(Assembly assembly) {
  std::vector<ResourcePtr> resources;
  KeyMap<Served> served;
  for (auto& [key, candidate] : assembly.candidates) {
    resources.push_back(candidate.resource);
    served.emplace_hint(served.end(), KeyOf(*candidate.resource),
                        Served{candidate.resource, std::string(candidate.file)});
  }
  // Each type's resources come in name order, so the types that did not
  // change (the clusters, under endpoint churn) are taken from the last
  // snapshot rather than indexed and hashed again.
  absl::StatusOr<SnapshotPtr> snapshot =
      Snapshot::Build(std::move(resources), clock_.Now(), {}, published_.get());
  if (!snapshot.ok()) {
    // The steps before make this impossible; keep serving what we had.
    LogError("xds directory %s: %s", options_.directory, snapshot.status().message());
    return snapshot.status();
  }
  served_ = std::move(served);
  Report(std::move(assembly.rejections));
  if (published_ == nullptr || (*snapshot)->version() != published_->version()) {
    published_ = *snapshot;
    LogInfo("xds directory %s: publishing snapshot %s (%d resources)", options_.directory,
            published_->version(), published_->size());
    publish_(published_);
  }
  return absl::OkStatus();
}

void XdsDirectorySource::Report(std::vector<Rejection> rejections) {
  std::vector<std::string> lines;
  for (const Rejection& r : rejections) {
    lines.push_back(absl::StrCat(
        r.file, ":", r.line, ": ",
        r.name.empty() ? "" : absl::StrCat(TypeNameOf(r.type_url), " \"", r.name, "\": "),
        r.message, r.serving_last_good ? " (serving its last good version)" : ""));
  }
  std::string summary = absl::StrJoin(lines, "\n");
  if (summary != last_error_summary_) {
    for (const std::string& line : lines) LogWarning("rejected %s", line);
    last_error_summary_ = summary;
  }
  rejected_gauge_->Set(static_cast<double>(rejections.size()));
  absl::MutexLock lock(&mu_);
  rejections_ = std::move(rejections);
}

void XdsDirectorySource::Start() {
  follower_.Start({.directory = options_.directory,
                   .extensions = kExtensions,
                   .poll_interval = options_.poll_interval,
                   .confirm_delay = options_.confirm_delay},
                  [this](const DirectoryFollower::Listing& listing) {
                    absl::MutexLock reload(&reload_mu_);
                    (void)Apply(listing);
                  });
}

void XdsDirectorySource::Stop() { follower_.Stop(); }

std::vector<Rejection> XdsDirectorySource::rejections() const {
  absl::MutexLock lock(&mu_);
  return rejections_;
}

}  // namespace holdfast
