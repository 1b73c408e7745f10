#pragma once
// The contract of SharedDocument (src/common/shared_document.h), passed by
// every implementation: instantiate SharedDocumentConformance with a
// factory that gives two handles on one fresh, absent document (two
// replicas sharing it).

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/common/shared_document.h"

namespace holdfast::testing {

struct SharedDocumentHandles {
  std::shared_ptr<void> owner;  // keeps the store (and the handles' targets) alive
  SharedDocument* a = nullptr;
  SharedDocument* b = nullptr;
};

struct SharedDocumentCase {
  std::string name;
  std::function<SharedDocumentHandles()> make;  // empty handles: skip (no server)
};

inline std::string CaseName(const ::testing::TestParamInfo<SharedDocumentCase>& info) {
  return info.param.name;
}

class SharedDocumentConformance : public ::testing::TestWithParam<SharedDocumentCase> {
 protected:
  void SetUp() override {
    handles_ = GetParam().make();
    if (handles_.a == nullptr) GTEST_SKIP() << "no store for " << GetParam().name;
  }
  SharedDocument& a() { return *handles_.a; }
  SharedDocument& b() { return *handles_.b; }

  SharedDocumentHandles handles_;
};

TEST_P(SharedDocumentConformance, AnAbsentDocumentReadsEmpty) {
  absl::StatusOr<DocumentVersion> read = a().Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->text, "");
  EXPECT_EQ(read->revision, "");
  EXPECT_FALSE(a().Describe().empty());
}

TEST_P(SharedDocumentConformance, TheFirstReplaceCreatesItForEveryHandle) {
  const std::string text = "{\"decisions\": []}\n\tline two: \xc3\xa9";
  absl::StatusOr<std::string> revision = a().Replace(text, "");
  ASSERT_TRUE(revision.ok()) << revision.status();
  EXPECT_FALSE(revision->empty());
  for (SharedDocument* handle : {&a(), &b()}) {
    absl::StatusOr<DocumentVersion> read = handle->Read();
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->text, text);
    EXPECT_EQ(read->revision, *revision);
  }
}

TEST_P(SharedDocumentConformance, AReplaceFromAStaleRevisionIsAbortedAndChangesNothing) {
  absl::StatusOr<std::string> first = a().Replace("one", "");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::string> again = b().Replace("two", "");  // b thinks it is absent
  EXPECT_TRUE(absl::IsAborted(again.status())) << again.status();
  absl::StatusOr<std::string> second = b().Replace("two", *first);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(*second, *first);
  absl::StatusOr<std::string> stale = a().Replace("three", *first);
  EXPECT_TRUE(absl::IsAborted(stale.status())) << stale.status();
  absl::StatusOr<DocumentVersion> read = a().Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->text, "two");
  EXPECT_EQ(read->revision, *second);
}

// Two writers incrementing one counter, each read-modify-replace retried on
// Aborted: no increment is lost, so the store compared and swapped.
TEST_P(SharedDocumentConformance, ConcurrentReadModifyReplaceLosesNoUpdate) {
  constexpr int kEach = 15;
  auto increment = [](SharedDocument* doc, int* conflicts) {
    for (int done = 0; done < kEach;) {
      absl::StatusOr<DocumentVersion> read = doc->Read();
      ASSERT_TRUE(read.ok()) << read.status();
      int value = 0;
      if (!read->text.empty()) ASSERT_TRUE(absl::SimpleAtoi(read->text, &value)) << read->text;
      absl::StatusOr<std::string> written = doc->Replace(absl::StrCat(value + 1), read->revision);
      if (absl::IsAborted(written.status())) {
        ++*conflicts;
        continue;
      }
      ASSERT_TRUE(written.ok()) << written.status();
      ++done;
    }
  };
  int conflicts_a = 0, conflicts_b = 0;
  std::thread other([&] { increment(&b(), &conflicts_b); });
  increment(&a(), &conflicts_a);
  other.join();
  absl::StatusOr<DocumentVersion> read = a().Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->text, absl::StrCat(2 * kEach))
      << "conflicts seen: " << conflicts_a << " + " << conflicts_b;
}

}  // namespace holdfast::testing
