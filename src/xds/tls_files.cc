#include "src/xds/tls_files.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "src/common/read_file.h"

namespace holdfast {
namespace {

constexpr int64_t kMaxPemBytes = 1 << 20;

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no PEM block found";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadRegularFile(path, kMaxPemBytes);
  if (!pem.ok())
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", pem.status().message()));
  return pem;
}

// Checks that `cert_pem` holds a certificate and `key_pem` the private key
// that matches it.
absl::Status CheckKeyPair(const XdsTlsOptions& tls, const std::string& cert_pem,
                          const std::string& key_pem) {
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-cert ", tls.cert_file, ": not a PEM certificate (", OpenSslError(), ")"));
  }
  absl::Cleanup free_cert = [cert] { X509_free(cert); };
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key ", tls.key_file, ": not a PEM private key (", OpenSslError(), ")"));
  }
  absl::Cleanup free_key = [key] { EVP_PKEY_free(key); };
  if (X509_check_private_key(cert, key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--tls-key ", tls.key_file,
                                                   " does not match the certificate in --tls-cert ",
                                                   tls.cert_file));
  }
  return absl::OkStatus();
}

// A CA bundle must hold at least one certificate: an empty or garbled one
// would make every client certificate fail verification.
absl::Status CheckCaBundle(const XdsTlsOptions& tls, const std::string& ca_pem) {
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-client-ca ", tls.client_ca_file, ": not a PEM certificate (", OpenSslError(), ")"));
  }
  X509_free(cert);
  return absl::OkStatus();
}

// `mtime` in whole seconds: gRPC's provider notices a file replaced while
// it read the key and certificate by comparing modification times in
// seconds, so each generation's files get a time of their own.
absl::Status WriteFile(const std::string& path, const std::string& content, time_t mtime) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", strerror(errno)));
  absl::Cleanup close_fd = [fd] { close(fd); };
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return absl::InternalError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
    written += static_cast<size_t>(n);
  }
  const struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
  if (futimens(fd, times) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot set the time of ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TlsMaterial> ReadTlsMaterial(const XdsTlsOptions& tls) {
  if (tls.key_file.empty()) return absl::InvalidArgumentError("--tls-cert needs --tls-key");
  TlsMaterial material;
  absl::StatusOr<std::string> cert = ReadPem("--tls-cert", tls.cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls-key", tls.key_file);
  if (!key.ok()) return key.status();
  if (absl::Status pair = CheckKeyPair(tls, *cert, *key); !pair.ok()) return pair;
  material.cert_pem = *std::move(cert);
  material.key_pem = *std::move(key);
  if (!tls.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("--tls-client-ca", tls.client_ca_file);
    if (!ca.ok()) return ca.status();
    if (absl::Status bundle = CheckCaBundle(tls, *ca); !bundle.ok()) return bundle;
    material.ca_pem = *std::move(ca);
  }
  return material;
}

namespace {

absl::StatusOr<std::string> MakePrivateDirectory(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) {
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
    if (mkdir(dir.c_str(), 0700) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot create ", dir, " for the xDS TLS files: ", strerror(errno)));
    }
    return dir;
  }
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / "holdfast-xds-tls-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {  // mode 0700
    return absl::InternalError(absl::StrCat("cannot create a directory under ", base.string(),
                                            " for the xDS TLS files: ", strerror(errno)));
  }
  return pattern;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StagedTlsFiles>> StagedTlsFiles::Create(const TlsMaterial& material,
                                                                       const std::string& dir) {
  absl::StatusOr<std::string> made = MakePrivateDirectory(dir);
  if (!made.ok()) return made.status();
  auto staged = std::unique_ptr<StagedTlsFiles>(new StagedTlsFiles(*made));
  if (absl::Status replaced = staged->Replace(material); !replaced.ok()) return replaced;
  return staged;
}

absl::Status StagedTlsFiles::WriteGeneration(int generation, const TlsMaterial& material) {
  const std::string dir = absl::StrCat(dir_, "/", generation);
  if (mkdir(dir.c_str(), 0700) != 0) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", strerror(errno)));
  }
  const time_t mtime = base_time_ + generation;
  if (absl::Status s = WriteFile(dir + "/cert.pem", material.cert_pem, mtime); !s.ok()) return s;
  if (absl::Status s = WriteFile(dir + "/key.pem", material.key_pem, mtime); !s.ok()) return s;
  return WriteFile(dir + "/ca.pem", material.ca_pem, mtime);
}

absl::Status StagedTlsFiles::Replace(const TlsMaterial& material) {
  const int next = generation_ + 1;
  if (absl::Status written = WriteGeneration(next, material); !written.ok()) return written;
  const std::string link = absl::StrCat(dir_, "/current.", next);
  if (symlink(absl::StrCat(next).c_str(), link.c_str()) != 0 ||
      rename(link.c_str(), (dir_ + "/current").c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot switch ", dir_, "/current to the new files: ", strerror(errno)));
  }
  // The generation before the previous one: a reader that resolved the link
  // before the previous swap has long finished with it.
  std::error_code ignored;
  std::filesystem::remove_all(absl::StrCat(dir_, "/", generation_ - 1), ignored);
  generation_ = next;
  return absl::OkStatus();
}

StagedTlsFiles::~StagedTlsFiles() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace holdfast
