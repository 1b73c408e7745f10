#include "src/admission/admission_review.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/kube/json_fields.h"
#include "src/model/decode.h"
#include "src/translate/cluster.h"
#include "src/translate/envoy_validation.h"
#include "src/translate/virtual_service.h"

namespace holdfast {
namespace {

// The object as holdfast's decoder reads it: Kubernetes adds metadata fields
// (uid, resourceVersion, managedFields, ...) that are not the user's input.
nlohmann::json UserInput(const nlohmann::json& object) {
  nlohmann::json input = object;
  nlohmann::json metadata = nlohmann::json::object();
  if (object.contains("metadata") && object["metadata"].is_object()) {
    for (const char* field : {"name", "namespace", "labels"}) {
      if (object["metadata"].contains(field)) metadata[field] = object["metadata"][field];
    }
  }
  input["metadata"] = metadata;
  input.erase("status");
  return input;
}

// Envoy's rules on what one object becomes, where that needs no other object.
std::vector<FieldError> EnvoyProblems(const GatewayObject& object) {
  if (object.kind() == kind::kUpstream) {
    ObjectStatus scratch;
    for (const ResourcePtr& resource : TranslateUpstream(object, &scratch)) {
      if (absl::Status valid = ValidateEnvoyResource(*resource->message()); !valid.ok()) {
        return {FieldError{"spec",
                           absl::StrCat("Envoy would refuse its ", TypeNameOf(resource->type_url()),
                                        ": ", valid.message()),
                           {}}};
      }
    }
  }
  if (object.kind() == kind::kVirtualService) {
    ObjectIndex index;
    index.Add(&object);
    absl::StatusOr<ServiceOutput> service =
        TranslateVirtualService(object, ServiceContext{&index, 503, ""});
    if (!service.ok()) return {FieldError{"spec", std::string(service.status().message()), {}}};
  }
  return {};
}

std::vector<FieldError> Problems(const nlohmann::json& object) {
  const std::string text =
      UserInput(object).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  DecodedFile decoded = DecodeObjects(text, "admission");
  if (decoded.syntax_error) return {*decoded.syntax_error};
  if (decoded.objects.size() != 1) return {FieldError{"", "expected one object", {}}};
  const DecodedObject& one = decoded.objects.front();
  if (!one.object) return one.errors.errors();
  return EnvoyProblems(*one.object);
}

nlohmann::json Denial(const std::string& uid, int code, const std::string& reason,
                      const std::vector<FieldError>& problems) {
  std::vector<std::string> lines;
  nlohmann::json causes = nlohmann::json::array();
  for (const FieldError& e : problems) {
    lines.push_back(e.path.empty() ? e.message : absl::StrCat(e.path, ": ", e.message));
    causes.push_back({{"field", e.path}, {"message", e.message}, {"reason", "FieldValueInvalid"}});
  }
  return {{"uid", uid},
          {"allowed", false},
          {"status",
           {{"code", code},
            {"reason", reason},
            {"message", absl::StrCat("holdfast: ", absl::StrJoin(lines, "; "))},
            {"details", {{"causes", causes}}}}}};
}

nlohmann::json Review(const nlohmann::json& response) {
  return {
      {"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}};
}

}  // namespace

nlohmann::json ReviewAdmission(const nlohmann::json& review) {
  if (!review.is_object() || !review.contains("request") || !review["request"].is_object()) {
    return Review(Denial("", 400, "BadRequest", {FieldError{"request", "missing", {}}}));
  }
  const nlohmann::json& request = review["request"];
  // Not value(): it throws on a uid of another type, and a thread that
  // threw would end the process.
  const std::string uid = JsonString(request, "uid");
  if (!request.contains("object") || !request["object"].is_object()) {
    // DELETE and CONNECT carry no object to check.
    return Review({{"uid", uid}, {"allowed", true}});
  }
  std::vector<FieldError> problems = Problems(request["object"]);
  if (problems.empty()) return Review({{"uid", uid}, {"allowed", true}});
  return Review(Denial(uid, 422, "Invalid", problems));
}

}  // namespace holdfast
