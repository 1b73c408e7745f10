#include "src/app/store_commands.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "src/model/yaml_load.h"
#include "src/source/config_files.h"
#include "src/source/directory_scanner.h"
#include "src/source/etcd_config_source.h"
#include "src/translate/translator.h"
#include "yaml-cpp/yaml.h"

namespace holdfast {
namespace {

constexpr int kObjectsPerTxn = 100;  // etcd allows 128 operations per transaction

struct Document {
  ObjectKey key;
  SourceLocation location;
  std::string text;  // the object alone, as YAML
};

// Splits a decoded file back into one YAML text per object, pairing each
// document with what DecodeObjects made of it (both skip empty documents).
absl::StatusOr<std::vector<Document>> SplitDocuments(const std::string& contents,
                                                     const DecodedFile& decoded) {
  std::vector<YAML::Node> nodes;
  try {
    nodes = LoadAllDocuments(contents);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(e.msg);
  }
  std::vector<Document> out;
  size_t index = 0;
  for (const YAML::Node& node : nodes) {
    if (!node || node.IsNull()) continue;
    if (index >= decoded.objects.size()) break;
    const DecodedObject& object = decoded.objects[index++];
    if (!object.key || !object.object) continue;
    YAML::Emitter emitter;
    emitter << node;
    Document document{*object.key, object.location, std::string(emitter.c_str()) + "\n"};
    // The stored text must mean what was validated.
    DecodedFile again = DecodeObjects(document.text, object.location.file);
    if (again.objects.size() != 1 || again.objects[0].key != object.key ||
        !again.objects[0].object) {
      return absl::InternalError(
          absl::StrCat(object.location.ToString(), ": the object does not survive re-encoding"));
    }
    out.push_back(std::move(document));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    if (!std::filesystem::is_directory(path)) {
      files.push_back(path);
      continue;
    }
    absl::StatusOr<DirectoryListing> scan = ScanDirectory(path, {".yaml", ".yml", ".json"});
    if (!scan.ok()) return scan.status();
    if (!scan->unreadable.empty()) {
      const auto& [dir, why] = *scan->unreadable.begin();
      return absl::UnavailableError(absl::StrCat(dir, ": ", why));
    }
    for (const auto& [file, fingerprint] : scan->files) files.push_back(file);
  }
  return files;
}

void PrintReasons(const ObjectKey& key, const ObjectStatus& status) {
  for (const FieldError& reason : status.reasons) {
    std::string where = reason.location.ToString();
    std::fprintf(stderr, "%s%s%s: %s%s%s\n", where.c_str(), where.empty() ? "" : ": ",
                 key.ToString().c_str(), reason.path.c_str(), reason.path.empty() ? "" : ": ",
                 reason.message.c_str());
  }
}

// The files of one `apply`, decoded as `validate` decodes files.
struct Batch {
  std::map<std::string, DecodedFile> decoded;
  std::vector<Document> documents;
  StatusMap statuses;  // of the files themselves
  TranslationInput input;

  bool Contains(const ObjectKey& key) const {
    return input.objects.contains(key) || input.invalid.contains(key) || statuses.contains(key);
  }
};

absl::StatusOr<Batch> ReadBatch(const std::vector<std::string>& files) {
  Batch batch;
  for (const std::string& file : files) {
    absl::StatusOr<std::string> contents = ReadWholeFile(file);
    if (!contents.ok()) return contents.status();
    DecodedFile& decoded = batch.decoded[file] = DecodeObjects(*contents, file);
    if (decoded.syntax_error) continue;
    absl::StatusOr<std::vector<Document>> split = SplitDocuments(*contents, decoded);
    if (!split.ok()) return split.status();
    for (Document& d : *split) batch.documents.push_back(std::move(d));
  }
  batch.input = AssembleInput(batch.decoded, {}, &batch.statuses);
  return batch;
}

// The statuses of the batch translated together with what the store holds,
// so conflicts with stored objects are found here rather than by the
// replicas.
absl::StatusOr<StatusMap> CheckWithStored(EtcdClient& client, const std::string& config_prefix,
                                          const Batch& batch) {
  absl::StatusOr<RangeResult> stored = client.GetPrefix(config_prefix);
  if (!stored.ok()) return stored.status();
  TranslationInput input;
  StatusMap ignored;
  for (const KeyValue& kv : stored->kvs) {
    EtcdConfigSource::AddStored(config_prefix, kv.key, DecodeObjects(kv.value, kv.key), &input,
                                &ignored);
  }
  for (const auto& [key, object] : batch.input.objects) {
    input.invalid.erase(key);
    input.objects.insert_or_assign(key, object);
  }
  for (const auto& [key, errors] : batch.input.invalid) {
    input.objects.erase(key);
    input.invalid[key] = errors;
  }
  Translator translator;
  return MergeStatuses(translator.Translate(input).statuses, batch.statuses);
}

// The batch's objects that are refused, every reason of the batch's
// objects printed.
std::set<ObjectKey> Refused(const StatusMap& statuses, const Batch& batch) {
  std::set<ObjectKey> refused;
  for (const auto& [key, status] : statuses) {
    if (!batch.Contains(key)) continue;
    if (status.state == StatusState::kRejected) refused.insert(key);
    if (status.state != StatusState::kAccepted) PrintReasons(key, status);
  }
  return refused;
}

// Writes the batch's objects not refused, kObjectsPerTxn per transaction;
// how many.
absl::StatusOr<size_t> Write(EtcdClient& client, const std::string& prefix, const Batch& batch,
                             const std::set<ObjectKey>& refused) {
  std::vector<const Document*> writes;
  for (const Document& d : batch.documents) {
    if (!refused.contains(d.key) && batch.input.objects.contains(d.key)) writes.push_back(&d);
  }
  for (size_t begin = 0; begin < writes.size(); begin += kObjectsPerTxn) {
    etcdserverpb::TxnRequest txn;
    for (size_t i = begin; i < writes.size() && i < begin + kObjectsPerTxn; ++i) {
      etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(ObjectStoreKey(prefix, "config", writes[i]->key));
      put->set_value(writes[i]->text);
    }
    absl::StatusOr<etcdserverpb::TxnResponse> response = client.Txn(txn);
    if (!response.ok()) return response.status();
  }
  return writes.size();
}

int Failed(const absl::Status& status) {
  std::cerr << status.message() << "\n";
  return 2;
}

}  // namespace

int RunApply(const ApplyOptions& options) {
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = ConnectEtcd(options.etcd);
  if (!client.ok()) return Failed(client.status());
  absl::StatusOr<std::vector<std::string>> files = ExpandPaths(options.files);
  if (!files.ok()) return Failed(files.status());
  absl::StatusOr<Batch> batch = ReadBatch(*files);
  if (!batch.ok()) return Failed(batch.status());
  absl::StatusOr<StatusMap> statuses =
      CheckWithStored(**client, options.etcd.prefix + "/config/", *batch);
  if (!statuses.ok()) return Failed(statuses.status());
  const std::set<ObjectKey> refused = Refused(*statuses, *batch);
  if (!refused.empty() && !options.partial) {
    std::fprintf(stderr,
                 "%zu of %zu objects invalid; nothing written (--partial writes the rest)\n",
                 refused.size(), batch->documents.size() + batch->input.invalid.size());
    return 1;
  }
  absl::StatusOr<size_t> written = Write(**client, options.etcd.prefix, *batch, refused);
  if (!written.ok()) return Failed(written.status());
  std::printf("applied %zu objects\n", *written);
  return refused.empty() ? 0 : 1;
}

int RunGet(const GetOptions& options) {
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = ConnectEtcd(options.etcd);
  if (!client.ok()) {
    std::cerr << client.status().message() << "\n";
    return 2;
  }
  std::string config_prefix = options.etcd.prefix + "/config/";
  std::string status_prefix = options.etcd.prefix + "/status/";
  if (!options.kind.empty()) {
    config_prefix += options.kind + "/";
    status_prefix += options.kind + "/";
  }
  absl::StatusOr<RangeResult> objects = (*client)->GetPrefix(config_prefix);
  if (!objects.ok()) {
    std::cerr << objects.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<RangeResult> statuses = (*client)->GetPrefix(status_prefix, objects->revision);
  if (!statuses.ok()) {
    std::cerr << statuses.status().message() << "\n";
    return 2;
  }
  std::map<std::string, nlohmann::json> status_by_object;  // "KIND/NS/NAME"
  for (const KeyValue& kv : statuses->kvs) {
    status_by_object[kv.key.substr(options.etcd.prefix.size() + 8)] =
        nlohmann::json::parse(kv.value, nullptr, false);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const KeyValue& kv : objects->kvs) {
    std::string relative = kv.key.substr(options.etcd.prefix.size() + 8);
    std::vector<std::string> parts = absl::StrSplit(relative, '/');
    if (parts.size() != 3) continue;
    auto status = status_by_object.find(relative);
    nlohmann::json stored = status == status_by_object.end() || status->second.is_discarded()
                                ? nlohmann::json(nullptr)
                                : status->second;
    list.push_back(
        {{"kind", parts[0]}, {"namespace", parts[1]}, {"name", parts[2]}, {"status", stored}});
  }
  if (options.output == "json") {
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  for (const nlohmann::json& item : list) {
    std::string state =
        item["status"].is_object() ? item["status"].value("state", "Unknown") : "Unknown";
    std::printf(
        "%-15s %-40s %s\n", item["kind"].get<std::string>().c_str(),
        absl::StrCat(item["namespace"].get<std::string>(), "/", item["name"].get<std::string>())
            .c_str(),
        state.c_str());
    if (item["status"].is_object()) {
      for (const nlohmann::json& reason :
           item["status"].value("reasons", nlohmann::json::array())) {
        std::printf("    %s: %s\n", reason.value("path", "").c_str(),
                    reason.value("message", "").c_str());
      }
    }
  }
  return 0;
}

int RunDelete(const DeleteOptions& options) {
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = ConnectEtcd(options.etcd);
  if (!client.ok()) {
    std::cerr << client.status().message() << "\n";
    return 2;
  }
  std::vector<std::string> parts = absl::StrSplit(options.name, '/');
  ObjectKey key{options.kind, parts.size() == 2 ? parts[0] : "default", parts.back()};
  if (parts.size() > 2 || key.name.empty() || key.ns.empty()) {
    std::cerr << "expected NAMESPACE/NAME or NAME, got \"" << options.name << "\"\n";
    return 2;
  }
  absl::StatusOr<int64_t> deleted =
      (*client)->Delete(ObjectStoreKey(options.etcd.prefix, "config", key));
  if (!deleted.ok()) {
    std::cerr << deleted.status().message() << "\n";
    return 2;
  }
  if (*deleted == 0) {
    std::cerr << key.ToString() << " not found\n";
    return 1;
  }
  std::printf("deleted %s\n", key.ToString().c_str());
  return 0;
}

}  // namespace holdfast
