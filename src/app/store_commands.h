#pragma once

#include <string>
#include <vector>

#include "src/app/etcd_flags.h"

namespace holdfast {

struct ApplyOptions {
  EtcdFlags etcd;
  std::vector<std::string> files;  // files or directories
  // Write the valid objects even when others are invalid (still exit 1).
  bool partial = false;
};

// `holdfast apply`: decodes and translates the objects in `files` together
// with what the store already holds, exactly as serve would, and writes the
// objects that are not Rejected to etcd (by default only if none is). One
// transaction per 100 objects. Returns the exit code.
int RunApply(const ApplyOptions& options);

struct GetOptions {
  EtcdFlags etcd;
  std::string kind;             // empty: every kind
  std::string output = "table";  // or "json"
};

// `holdfast get`: lists stored objects with the statuses the leader wrote.
int RunGet(const GetOptions& options);

struct DeleteOptions {
  EtcdFlags etcd;
  std::string kind;
  std::string name;  // NAMESPACE/NAME, or NAME in namespace "default"
};

// `holdfast delete`: removes one object; exit 1 if it did not exist.
int RunDelete(const DeleteOptions& options);

}  // namespace holdfast
