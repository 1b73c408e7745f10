#pragma once

#include <ctime>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace holdfast {

// TLS on the xDS port. With `client_ca_file` set, clients must present a
// certificate signed by that CA (mutual TLS).
struct XdsTlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  // Where the checked copy that gRPC reads is kept (StagedTlsFiles): this
  // directory, emptied at start, or a new one under $TMPDIR when empty.
  std::string staging_dir;
  bool enabled() const { return !cert_file.empty(); }
};

// The contents of the TLS files, checked: PEM that parses, a key that
// matches the certificate, a CA bundle with at least one certificate.
struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
  std::string ca_pem;  // empty without --tls-client-ca
  bool operator==(const TlsMaterial&) const = default;
};

// Reads and checks the files of `tls` (enabled). Errors name the flag and
// the file, so a mistake is reported as what it is, never as "cannot
// listen".
absl::StatusOr<TlsMaterial> ReadTlsMaterial(const XdsTlsOptions& tls);

// A private copy of checked TLS material, in a directory of mode 0700 that
// only this object writes, for gRPC's file-watching certificate provider
// to read. Replace() writes the new files into a new subdirectory and
// swaps the `current` symlink to it in one rename, and gives each
// generation's files a modification time of their own (gRPC re-reads a pair
// whose times changed while it read them), so a reader sees the old key and
// certificate or the new ones, never one of each, and only
// material that passed ReadTlsMaterial's checks ever reaches gRPC. The
// directory is removed on destruction. Not thread-safe.
class StagedTlsFiles {
 public:
  // In `dir` (its earlier content removed: a crashed process's copy of a
  // private key must not linger), or a new directory under $TMPDIR.
  static absl::StatusOr<std::unique_ptr<StagedTlsFiles>> Create(const TlsMaterial& material,
                                                                const std::string& dir = "");
  ~StagedTlsFiles();

  absl::Status Replace(const TlsMaterial& material);

  std::string cert_path() const { return dir_ + "/current/cert.pem"; }
  std::string key_path() const { return dir_ + "/current/key.pem"; }
  std::string ca_path() const { return dir_ + "/current/ca.pem"; }

 private:
  explicit StagedTlsFiles(std::string dir) : dir_(std::move(dir)), base_time_(time(nullptr)) {}
  absl::Status WriteGeneration(int generation, const TlsMaterial& material);

  const std::string dir_;
  const time_t base_time_;  // generation N's files are modified at base_time_ + N
  int generation_ = 0;
};

}  // namespace holdfast
