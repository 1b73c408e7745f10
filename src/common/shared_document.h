#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace holdfast {

// One small document as the store holds it: its text, and the store's
// revision of it ("" while there is none).
struct DocumentVersion {
  std::string text;
  std::string revision;
};

// One small text document in the store that the replicas of a deployment
// share, read whole and replaced whole only if nobody replaced it since it
// was read (optimistic concurrency: the store's compare-and-swap). What
// replicas agree on through it needs no leader. Implementations: an etcd
// key (EtcdSharedDocument), a ConfigMap (KubeSharedDocument), and
// InMemorySharedDocument for a replica without a store and for unit tests;
// test/common/shared_document_conformance.h is the contract every one of
// them passes.
//
// Failures: Unavailable or DeadlineExceeded when the store did not answer
// (a Replace may then have applied or not: read again);
// PermissionDenied when it refused. Thread-safe; calls block up to the
// store's call timeout.
class SharedDocument {
 public:
  virtual ~SharedDocument() = default;
  // The document, or {"", ""} while there is none.
  virtual absl::StatusOr<DocumentVersion> Read() = 0;
  // Replaces the document with `text` if its revision is still `revision`
  // ("": if there is still none). Aborted when it changed meanwhile (read
  // it again); returns the new revision.
  virtual absl::StatusOr<std::string> Replace(const std::string& text,
                                              const std::string& revision) = 0;
  // Where it is, for logs and pages ("etcd key /holdfast/rollout").
  virtual std::string Describe() const = 0;
};

// A SharedDocument in this process's memory: shared by nothing else.
class InMemorySharedDocument : public SharedDocument {
 public:
  absl::StatusOr<DocumentVersion> Read() override;
  absl::StatusOr<std::string> Replace(const std::string& text,
                                      const std::string& revision) override;
  std::string Describe() const override { return "memory (this replica only)"; }

  // Tests: every call fails with Unavailable while set.
  void SetUnavailable(bool unavailable);

 private:
  absl::Mutex mu_;
  std::string text_ ABSL_GUARDED_BY(mu_);
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 0;  // 0: none yet
  bool unavailable_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace holdfast
