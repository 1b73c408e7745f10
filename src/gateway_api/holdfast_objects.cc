#include "src/gateway_api/holdfast_objects.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/common/forget_unused.h"
#include "src/common/utf8.h"
#include "src/model/decode.h"
#include "src/snapshot/resource.h"

namespace holdfast::gateway_api {
namespace {

// Whether every key and string in `value` is UTF-8, as DecodeJson needs.
bool AllUtf8(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      for (const auto& [key, item] : value.items()) {
        if (!IsValidUtf8(key) || !AllUtf8(item)) return false;
      }
      return true;
    case nlohmann::json::value_t::array:
      return std::all_of(value.begin(), value.end(),
                         [](const auto& item) { return AllUtf8(item); });
    case nlohmann::json::value_t::string:
      return IsValidUtf8(value.get_ref<const std::string&>());
    default:
      return true;
  }
}

// The document around `spec`; nullopt when some text in it is not UTF-8.
std::optional<nlohmann::json> DocumentOf(const std::string& kind, const std::string& ns,
                                         const nlohmann::json& spec) {
  if (!IsValidUtf8(kind) || !IsValidUtf8(ns) || !AllUtf8(spec)) return std::nullopt;
  return nlohmann::json{{"apiVersion", "holdfast.dev/v1"},
                        {"kind", kind},
                        {"metadata", {{"name", "synthesized"}, {"namespace", ns}}},
                        {"spec", spec}};
}

void KeepDecoded(const DecodedObject& decoded, std::optional<GatewayObject>* object,
                 std::vector<FieldError>* errors) {
  if (decoded.object) {
    *object = *decoded.object;
    return;
  }
  for (const FieldError& e : decoded.errors.errors()) errors->push_back({e.path, e.message, {}});
  if (errors->empty()) errors->push_back({"", "cannot be decoded", {}});
}

void DecodeText(const std::string& text, const std::string& file,
                std::optional<GatewayObject>* object, std::vector<FieldError>* errors) {
  DecodedFile decoded = DecodeObjects(text, file);
  if (decoded.syntax_error) {
    errors->push_back({"", decoded.syntax_error->message, {}});
  } else if (decoded.objects.size() != 1) {
    errors->push_back({"", "cannot be decoded", {}});
  } else {
    KeepDecoded(decoded.objects.front(), object, errors);
  }
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
  if (fresh) {
    // Parsing the text, and writing the document out again for its digest,
    // took most of a conversion's time, then so did copying it into
    // yaml-cpp's nodes: the JSON is decoded as it is, the text is the key.
    if (std::optional<nlohmann::json> document = DocumentOf(kind, ns, spec)) {
      KeepDecoded(DecodeJson(*document, at.file, ContentDigest(text)), &entry.object,
                  &entry.errors);
    } else {
      ++decoded_as_text_;
      DecodeText(text, at.file, &entry.object, &entry.errors);
    }
  }
  for (const FieldError& e : entry.errors) errors->Add(e.path, e.message);
  if (!entry.object) return std::nullopt;
  GatewayObject object = *entry.object;
  object.meta.name = name;
  object.meta.location = at;
  return object;
}

void HoldfastObjectDecoder::EndConversion() { ForgetUnused(entries_); }

}  // namespace holdfast::gateway_api
