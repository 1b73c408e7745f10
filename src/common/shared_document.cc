#include "src/common/shared_document.h"

#include "absl/strings/str_cat.h"

namespace holdfast {

absl::StatusOr<DocumentVersion> InMemorySharedDocument::Read() {
  absl::MutexLock lock(&mu_);
  if (unavailable_) return absl::UnavailableError("in-memory document: unavailable (test)");
  if (revision_ == 0) return DocumentVersion{};
  return DocumentVersion{text_, absl::StrCat(revision_)};
}

absl::StatusOr<std::string> InMemorySharedDocument::Replace(const std::string& text,
                                                            const std::string& revision) {
  absl::MutexLock lock(&mu_);
  if (unavailable_) return absl::UnavailableError("in-memory document: unavailable (test)");
  const std::string current = revision_ == 0 ? "" : absl::StrCat(revision_);
  if (revision != current) {
    return absl::AbortedError(absl::StrCat("in-memory document: revision ", current,
                                           " is not the one read (", revision, ")"));
  }
  text_ = text;
  return absl::StrCat(++revision_);
}

void InMemorySharedDocument::SetUnavailable(bool unavailable) {
  absl::MutexLock lock(&mu_);
  unavailable_ = unavailable;
}

}  // namespace holdfast
