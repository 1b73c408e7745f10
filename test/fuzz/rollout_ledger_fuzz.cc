// Fuzz target: the staged rollout's shared decisions document
// (PREFIX/rollout/decisions in etcd, the ConfigMap holdfast-rollout), which
// anyone with write access to the store can edit. Reading it must never
// crash: a decision, none, or DataLoss naming the field; recording over it
// must always succeed and leave a readable document.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "src/common/log.h"
#include "src/common/shared_document.h"
#include "src/rollout/rollout_ledger.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    holdfast::SetMinLogLevel(holdfast::LogLevel::kError);  // the replace warning, every input
    return true;
  }();
  (void)quiet;
  holdfast::InMemorySharedDocument doc;
  if (!doc.Replace(std::string(reinterpret_cast<const char*>(data), size), "").ok()) abort();
  holdfast::RolloutLedger ledger(&doc);
  auto found = ledger.Find("v1");
  if (!found.ok() && !absl::IsDataLoss(found.status())) abort();
  const holdfast::RolloutDecision hold{.candidate = "v2",
                                       .action = holdfast::RolloutDecision::Action::kHold,
                                       .reason = "r",
                                       .replica = "a",
                                       .at = "t"};
  auto recorded = ledger.Record(hold, /*overrule=*/false);
  if (!recorded.ok()) abort();
  auto again = ledger.Find("v2");
  if (!again.ok() || !again->has_value()) abort();
  return 0;
}
