// Fuzz target: the admission webhook's review handling, which reads what the
// API server forwards from any writer of holdfast's objects. It must never
// crash or throw, and must always answer with an allowed flag.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "src/admission/admission_review.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json review = nlohmann::json::parse(data, data + size, nullptr, false);
  nlohmann::json answer = holdfast::ReviewAdmission(review);
  if (!answer["response"].contains("allowed")) std::abort();
  return 0;
}
