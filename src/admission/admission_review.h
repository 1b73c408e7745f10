#pragma once

#include "nlohmann/json.hpp"

namespace holdfast {

// Answers an admission.k8s.io/v1 AdmissionReview for holdfast's objects with
// the checks `holdfast validate` makes on one object: decoding with field
// paths (unknown fields, ranges, names, regexes, header names, ...) and
// Envoy's own rules on what an upstream or a virtual service becomes. Checks
// that need other objects (references, domain conflicts) are not made: the
// objects may arrive in any order, and holdfast reports those as statuses.
//
// A denial carries every problem as a cause with its field path. Never
// throws: a review that cannot be read is answered with a 400 status (the
// API server then applies the webhook's failure policy).
nlohmann::json ReviewAdmission(const nlohmann::json& review);

}  // namespace holdfast
