#include "src/xds/node_matcher.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace holdfast {

using envoy::type::matcher::v3::StringMatcher;
using envoy::type::matcher::v3::ValueMatcher;
using google::protobuf::Value;

class NodeMatcher::Value {
 public:
  virtual ~Value() = default;
  virtual bool Matches(const google::protobuf::Value& value) const = 0;
};

namespace {

using ValuePtr = std::shared_ptr<const NodeMatcher::Value>;

absl::StatusOr<ValuePtr> CompileValue(const ValueMatcher& matcher, const std::string& path);

class StringValue : public NodeMatcher::Value {
 public:
  static absl::StatusOr<ValuePtr> Compile(const StringMatcher& matcher, const std::string& path) {
    auto compiled = std::make_shared<StringValue>();
    compiled->matcher_ = matcher;
    compiled->ignore_case_ = matcher.ignore_case();
    switch (matcher.match_pattern_case()) {
      case StringMatcher::kExact:
      case StringMatcher::kPrefix:
      case StringMatcher::kSuffix:
      case StringMatcher::kContains:
        return compiled;
      case StringMatcher::kSafeRegex: {
        RE2::Options options;
        options.set_case_sensitive(!matcher.ignore_case());
        options.set_log_errors(false);
        compiled->regex_ = std::make_shared<RE2>(matcher.safe_regex().regex(), options);
        if (!compiled->regex_->ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ".safe_regex.regex: ", compiled->regex_->error()));
        }
        return compiled;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": only exact, prefix, suffix, contains and safe_regex are supported"));
    }
  }

  bool Matches(const google::protobuf::Value& value) const override {
    return value.kind_case() == google::protobuf::Value::kStringValue &&
           MatchesString(value.string_value());
  }

  bool MatchesString(absl::string_view s) const {
    switch (matcher_.match_pattern_case()) {
      case StringMatcher::kExact:
        return ignore_case_ ? absl::EqualsIgnoreCase(s, matcher_.exact()) : s == matcher_.exact();
      case StringMatcher::kPrefix:
        return ignore_case_ ? absl::StartsWithIgnoreCase(s, matcher_.prefix())
                            : absl::StartsWith(s, matcher_.prefix());
      case StringMatcher::kSuffix:
        return ignore_case_ ? absl::EndsWithIgnoreCase(s, matcher_.suffix())
                            : absl::EndsWith(s, matcher_.suffix());
      case StringMatcher::kContains:
        return ignore_case_ ? absl::StrContains(absl::AsciiStrToLower(s),
                                                absl::AsciiStrToLower(matcher_.contains()))
                            : absl::StrContains(s, matcher_.contains());
      case StringMatcher::kSafeRegex:
        return RE2::FullMatch(re2::StringPiece(s.data(), s.size()), *regex_);
      default:
        return false;
    }
  }

 private:
  StringMatcher matcher_;
  bool ignore_case_ = false;
  std::shared_ptr<RE2> regex_;
};

// Any kind but string: null, number, bool, presence, lists and ORs.
class OtherValue : public NodeMatcher::Value {
 public:
  explicit OtherValue(ValueMatcher matcher, std::vector<ValuePtr> children = {})
      : matcher_(std::move(matcher)), children_(std::move(children)) {}

  bool Matches(const google::protobuf::Value& value) const override {
    switch (matcher_.match_pattern_case()) {
      case ValueMatcher::kNullMatch:
        return value.kind_case() == google::protobuf::Value::kNullValue;
      case ValueMatcher::kDoubleMatch: {
        if (value.kind_case() != google::protobuf::Value::kNumberValue) return false;
        const auto& d = matcher_.double_match();
        if (d.has_range()) {
          return value.number_value() >= d.range().start() &&
                 value.number_value() < d.range().end();
        }
        return value.number_value() == d.exact();
      }
      case ValueMatcher::kBoolMatch:
        return value.kind_case() == google::protobuf::Value::kBoolValue &&
               value.bool_value() == matcher_.bool_match();
      case ValueMatcher::kPresentMatch:
        // Only reached for a present value; absence is decided by the caller.
        return matcher_.present_match();
      case ValueMatcher::kListMatch:
        if (value.kind_case() != google::protobuf::Value::kListValue) return false;
        for (const google::protobuf::Value& item : value.list_value().values()) {
          if (children_[0]->Matches(item)) return true;
        }
        return false;
      case ValueMatcher::kOrMatch:
        for (const ValuePtr& child : children_) {
          if (child->Matches(value)) return true;
        }
        return false;
      default:
        return false;
    }
  }

 private:
  ValueMatcher matcher_;
  std::vector<ValuePtr> children_;
};

absl::StatusOr<ValuePtr> CompileValue(const ValueMatcher& matcher, const std::string& path) {
  switch (matcher.match_pattern_case()) {
    case ValueMatcher::kStringMatch:
      return StringValue::Compile(matcher.string_match(), absl::StrCat(path, ".string_match"));
    case ValueMatcher::kNullMatch:
    case ValueMatcher::kDoubleMatch:
    case ValueMatcher::kBoolMatch:
    case ValueMatcher::kPresentMatch:
      return std::make_shared<OtherValue>(matcher);
    case ValueMatcher::kListMatch: {
      if (!matcher.list_match().has_one_of()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".list_match.one_of: required"));
      }
      absl::StatusOr<ValuePtr> one_of =
          CompileValue(matcher.list_match().one_of(), absl::StrCat(path, ".list_match.one_of"));
      if (!one_of.ok()) return one_of.status();
      return std::make_shared<OtherValue>(matcher, std::vector<ValuePtr>{*std::move(one_of)});
    }
    case ValueMatcher::kOrMatch: {
      std::vector<ValuePtr> children;
      for (int i = 0; i < matcher.or_match().value_matchers_size(); ++i) {
        absl::StatusOr<ValuePtr> child =
            CompileValue(matcher.or_match().value_matchers(i),
                         absl::StrCat(path, ".or_match.value_matchers[", i, "]"));
        if (!child.ok()) return child.status();
        children.push_back(*std::move(child));
      }
      return std::make_shared<OtherValue>(matcher, std::move(children));
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(path, ": no match_pattern set"));
  }
}

// The metadata value at `keys`: first key names a filter, the rest walk
// into its Struct. Null when absent.
const google::protobuf::Value* Lookup(const envoy::config::core::v3::Node& node,
                                      const std::vector<std::string>& keys) {
  const auto& top = node.metadata().fields();
  auto it = top.find(keys[0]);
  if (it == top.end()) return nullptr;
  const google::protobuf::Value* value = &it->second;
  for (size_t i = 1; i < keys.size(); ++i) {
    if (value->kind_case() != google::protobuf::Value::kStructValue) return nullptr;
    const auto& fields = value->struct_value().fields();
    auto next = fields.find(keys[i]);
    if (next == fields.end()) return nullptr;
    value = &next->second;
  }
  return value;
}

}  // namespace

absl::StatusOr<NodeMatcher> NodeMatcher::Compile(
    const envoy::type::matcher::v3::NodeMatcher& matcher, const std::string& path) {
  NodeMatcher compiled;
  if (matcher.has_node_id()) {
    absl::StatusOr<ValuePtr> id = StringValue::Compile(matcher.node_id(), path + ".node_id");
    if (!id.ok()) return id.status();
    compiled.node_id_ = *std::move(id);
  }
  for (int i = 0; i < matcher.node_metadatas_size(); ++i) {
    const auto& structure = matcher.node_metadatas(i);
    const std::string at = absl::StrCat(path, ".node_metadatas[", i, "]");
    Struct entry;
    for (int j = 0; j < structure.path_size(); ++j) {
      if (structure.path(j).key().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(at, ".path[", j, "].key: empty"));
      }
      entry.keys.push_back(structure.path(j).key());
    }
    if (entry.keys.empty()) return absl::InvalidArgumentError(at + ".path: empty");
    if (!structure.has_value()) return absl::InvalidArgumentError(at + ".value: required");
    absl::StatusOr<ValuePtr> value = CompileValue(structure.value(), at + ".value");
    if (!value.ok()) return value.status();
    entry.value = *std::move(value);
    compiled.metadata_.push_back(std::move(entry));
  }
  return compiled;
}

bool NodeMatcher::Matches(const envoy::config::core::v3::Node& node) const {
  if (node_id_ != nullptr && !static_cast<const StringValue&>(*node_id_).MatchesString(node.id())) {
    return false;
  }
  for (const Struct& entry : metadata_) {
    const google::protobuf::Value* value = Lookup(node, entry.keys);
    if (value == nullptr) return false;  // present_match: false matches nothing either
    if (!entry.value->Matches(*value)) return false;
  }
  return true;
}

}  // namespace holdfast
