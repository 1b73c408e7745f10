#include "src/common/shared_document.h"

#include "gtest/gtest.h"
#include "test/common/shared_document_conformance.h"

namespace holdfast::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(InMemory, SharedDocumentConformance,
                         ::testing::Values(SharedDocumentCase{
                             "InMemory",
                             [] {
                               auto doc = std::make_shared<InMemorySharedDocument>();
                               return SharedDocumentHandles{doc, doc.get(), doc.get()};
                             }}),
                         CaseName);

TEST(InMemorySharedDocument, FailsWhileUnavailable) {
  InMemorySharedDocument doc;
  doc.SetUnavailable(true);
  EXPECT_TRUE(absl::IsUnavailable(doc.Read().status()));
  EXPECT_TRUE(absl::IsUnavailable(doc.Replace("x", "").status()));
  doc.SetUnavailable(false);
  EXPECT_TRUE(doc.Replace("x", "").ok());
}

}  // namespace
}  // namespace holdfast::testing
