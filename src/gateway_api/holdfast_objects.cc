#include "src/gateway_api/holdfast_objects.h"

#include "src/model/decode.h"

namespace holdfast::gateway_api {

std::optional<GatewayObject> DecodeHoldfastObject(const std::string& kind, const std::string& ns,
                                                  const std::string& name,
                                                  const nlohmann::json& spec, FieldErrors* errors) {
  const nlohmann::json doc = {{"apiVersion", "holdfast.dev/v1"},
                              {"kind", kind},
                              {"metadata", {{"name", "synthesized"}, {"namespace", ns}}},
                              {"spec", spec}};
  const SourceLocation at{"gateway-api:" + kind + "/" + ns + "/" + name, 0};
  DecodedFile decoded = DecodeObjects(doc.dump(), at.file);
  if (decoded.syntax_error) {
    errors->Add("", decoded.syntax_error->message);
    return std::nullopt;
  }
  if (decoded.objects.size() != 1 || !decoded.objects.front().object) {
    for (const DecodedObject& object : decoded.objects) {
      for (const FieldError& e : object.errors.errors()) errors->Add(e.path, e.message);
    }
    if (errors->empty()) errors->Add("", "cannot be decoded");
    return std::nullopt;
  }
  GatewayObject object = *decoded.objects.front().object;
  object.meta.name = name;
  object.meta.location = at;
  return object;
}

}  // namespace holdfast::gateway_api
