#include "src/gateway_api/holdfast_objects.h"

#include "absl/strings/str_cat.h"
#include "src/model/decode.h"

namespace holdfast::gateway_api {
namespace {

void DecodeText(const std::string& text, const std::string& file,
                std::optional<GatewayObject>* object, std::vector<FieldError>* errors) {
  DecodedFile decoded = DecodeObjects(text, file);
  if (decoded.syntax_error) {
    errors->push_back({"", decoded.syntax_error->message, {}});
    return;
  }
  if (decoded.objects.size() != 1 || !decoded.objects.front().object) {
    for (const DecodedObject& o : decoded.objects) {
      for (const FieldError& e : o.errors.errors()) errors->push_back({e.path, e.message, {}});
    }
    if (errors->empty()) errors->push_back({"", "cannot be decoded", {}});
    return;
  }
  *object = *decoded.objects.front().object;
}

}  // namespace

std::optional<GatewayObject> HoldfastObjectDecoder::Decode(const std::string& kind,
                                                           const std::string& ns,
                                                           const std::string& name,
                                                           const nlohmann::json& spec,
                                                           FieldErrors* errors) {
  // Decoded routes carry the file name in their locations: it is part of
  // the key, so that two objects of the same text each keep their own.
  const SourceLocation at{"gateway-api:" + kind + "/" + ns + "/" + name, 0};
  // The document is written around the spec's text: building it as JSON
  // would copy the spec.
  const std::string text = absl::StrCat(
      R"({"apiVersion":"holdfast.dev/v1","kind":)",
      nlohmann::json(kind).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      R"(,"metadata":{"name":"synthesized","namespace":)",
      nlohmann::json(ns).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      R"(},"spec":)",
      // Replacing bytes that are not UTF-8 rather than throwing:
      // a thrown dump would end the process.
      spec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "}");
  auto [it, fresh] = entries_.try_emplace(absl::StrCat(at.file, "\n", text));
  Entry& entry = it->second;
  entry.used = true;
  if (fresh) DecodeText(text, at.file, &entry.object, &entry.errors);
  for (const FieldError& e : entry.errors) errors->Add(e.path, e.message);
  if (!entry.object) return std::nullopt;
  GatewayObject object = *entry.object;
  object.meta.name = name;
  object.meta.location = at;
  return object;
}

void HoldfastObjectDecoder::EndConversion() {
  absl::erase_if(entries_, [](const auto& entry) { return !entry.second.used; });
  for (auto& [text, entry] : entries_) entry.used = false;
}

}  // namespace holdfast::gateway_api
