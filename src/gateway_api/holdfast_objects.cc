#include "src/gateway_api/holdfast_objects.h"

#include "absl/strings/str_cat.h"
#include "src/common/forget_unused.h"
#include "src/common/utf8.h"
#include "src/model/decode.h"
#include "src/snapshot/resource.h"

namespace holdfast::gateway_api {
namespace {

// Writes `value` into `node` as the node a YAML parser makes of its JSON
// text (every scalar as its text). `node` is part of the document, so every
// node is made in the document's memory: subtrees built apart and attached
// are merged node by node, which cost more than parsing. False when a
// string is not UTF-8: the text, written with replacement characters, is
// decoded then.
bool FillYaml(const nlohmann::json& value, YAML::Node node) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      if (value.empty()) node = YAML::Node(YAML::NodeType::Map);
      for (const auto& [key, item] : value.items()) {
        if (!IsValidUtf8(key) || !FillYaml(item, node[key])) return false;
      }
      return true;
    case nlohmann::json::value_t::array:
      if (value.empty()) node = YAML::Node(YAML::NodeType::Sequence);
      for (size_t i = 0; i < value.size(); ++i) {
        if (!FillYaml(value[i], node[i])) return false;
      }
      return true;
    case nlohmann::json::value_t::string: {
      const std::string& text = value.get_ref<const std::string&>();
      if (!IsValidUtf8(text)) return false;
      node = text;
      return true;
    }
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      node = YAML::Node(YAML::NodeType::Null);
      return true;
    default:  // numbers and booleans, as JSON writes them
      node = value.dump();
      return true;
  }
}

// The document around `spec`, as the node its text parses to.
std::optional<YAML::Node> DocumentOf(const std::string& kind, const std::string& ns,
                                     const nlohmann::json& spec) {
  if (!IsValidUtf8(kind) || !IsValidUtf8(ns)) return std::nullopt;
  YAML::Node document(YAML::NodeType::Map);
  document["apiVersion"] = "holdfast.dev/v1";
  document["kind"] = kind;
  document["metadata"]["name"] = "synthesized";
  document["metadata"]["namespace"] = ns;
  if (!FillYaml(spec, document["spec"])) return std::nullopt;
  return document;
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
    // took most of a conversion's time: the text is only the key.
    if (std::optional<YAML::Node> document = DocumentOf(kind, ns, spec)) {
      KeepDecoded(DecodeNode(*document, at.file, ContentDigest(text)), &entry.object,
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
