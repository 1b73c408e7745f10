#include "src/model/yaml_load.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/parser.h"

namespace holdfast {
namespace {

// Discards events; only the number of documents matters.
class IgnoreEvents : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// LoadAllDocuments, with yaml-cpp's own errors.
std::vector<YAML::Node> LoadAllGuarded(const std::string& contents) {
  std::stringstream stream(contents);
  YAML::Parser parser(stream);
  IgnoreEvents events;
  size_t documents = 0;
  while (parser.HandleNextDocument(events)) {
    if (++documents > contents.size() + 1) {
      YAML::Mark mark;  // the position is not exposed; say what it is instead
      throw YAML::ParserException(mark, "unexpected ',' outside a flow collection");
    }
  }
  return YAML::LoadAll(contents);
}

}  // namespace

std::vector<YAML::Node> LoadAllDocuments(const std::string& contents) {
  try {
    return LoadAllGuarded(contents);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp says "bad file"; say what is wrong instead.
    throw YAML::ParserException(e.mark,
                                absl::StrCat("nested more than ", e.depth() - 1, " levels deep"));
  }
}

bool AppendCanonicalForm(const YAML::Node& node, size_t& budget, std::string& out) {
  if (budget == 0) return false;
  --budget;
  auto append_text = [&out](const std::string& text) {
    absl::StrAppend(&out, text.size(), ":", text);
  };
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
      out += 'u';
      return true;
    case YAML::NodeType::Null:
      out += 'n';
      append_text(node.Tag());
      return true;
    case YAML::NodeType::Scalar:
      out += 's';
      append_text(node.Tag());
      append_text(node.Scalar());
      return true;
    case YAML::NodeType::Sequence:
      absl::StrAppend(&out, "q", node.size(), ":");
      append_text(node.Tag());
      for (const YAML::Node& item : node) {
        if (!AppendCanonicalForm(item, budget, out)) return false;
      }
      return true;
    case YAML::NodeType::Map:
      absl::StrAppend(&out, "m", node.size(), ":");
      append_text(node.Tag());
      for (const auto& entry : node) {
        if (!AppendCanonicalForm(entry.first, budget, out) ||
            !AppendCanonicalForm(entry.second, budget, out)) {
          return false;
        }
      }
      return true;
  }
  return false;
}

}  // namespace holdfast
