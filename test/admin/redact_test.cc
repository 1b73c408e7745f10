#include "src/snapshot/redact.h"

#include <string>

#include "envoy/config/core/v3/grpc_service.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/common.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "udpa/annotations/sensitive.pb.h"

namespace holdfast {
namespace {

using envoy::config::listener::v3::Listener;
using envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext;
using envoy::extensions::transport_sockets::tls::v3::Secret;
using envoy::extensions::transport_sockets::tls::v3::TlsCertificate;

constexpr char kKey[] = "-----BEGIN PRIVATE KEY-----\nMIIBsecret\n-----END PRIVATE KEY-----\n";
constexpr char kCert[] = "-----BEGIN CERTIFICATE-----\nMIIBpublic\n-----END CERTIFICATE-----\n";

// The redaction relies on the generated descriptors carrying the Envoy API's
// (udpa.annotations.sensitive) option; if a protobuf or build change ever
// dropped it, every secret would show.
TEST(RedactSecrets, GeneratedDescriptorsCarryTheSensitiveAnnotation) {
  const auto* key = TlsCertificate::descriptor()->FindFieldByName("private_key");
  const auto* chain = TlsCertificate::descriptor()->FindFieldByName("certificate_chain");
  ASSERT_NE(key, nullptr);
  EXPECT_TRUE(key->options().GetExtension(udpa::annotations::sensitive));
  EXPECT_FALSE(chain->options().GetExtension(udpa::annotations::sensitive));
}

TEST(RedactSecrets, UnannotatedSecretFieldsExist) {
  for (const std::string& name : UnannotatedSecretFields()) {
    const auto* field = google::protobuf::DescriptorPool::generated_pool()->FindFieldByName(name);
    ASSERT_NE(field, nullptr) << name;
    EXPECT_EQ(field->cpp_type(), google::protobuf::FieldDescriptor::CPPTYPE_STRING) << name;
  }
}

// What the gateway translator serves for a Gateway with a TLS secret: the
// key inside an Any inside the listener.
TEST(RedactSecrets, RedactsAKeyInsideAListenersTransportSocket) {
  DownstreamTlsContext tls;
  auto* certificate = tls.mutable_common_tls_context()->add_tls_certificates();
  certificate->mutable_certificate_chain()->set_inline_string(kCert);
  certificate->mutable_private_key()->set_inline_string(kKey);
  certificate->mutable_password()->set_inline_bytes("hunter2");
  Listener listener;
  listener.set_name("gateway");
  listener.add_filter_chains()->mutable_transport_socket()->mutable_typed_config()->PackFrom(tls);

  EXPECT_TRUE(RedactSecrets(listener));

  DownstreamTlsContext shown;
  ASSERT_TRUE(listener.filter_chains(0).transport_socket().typed_config().UnpackTo(&shown));
  const TlsCertificate& shown_certificate = shown.common_tls_context().tls_certificates(0);
  EXPECT_EQ(shown_certificate.private_key().inline_string(), kRedacted);
  EXPECT_EQ(shown_certificate.password().inline_bytes(), kRedacted);
  EXPECT_EQ(shown_certificate.certificate_chain().inline_string(), kCert);
  EXPECT_EQ(listener.name(), "gateway");
  EXPECT_EQ(listener.SerializeAsString().find("MIIBsecret"), std::string::npos);
  EXPECT_EQ(listener.SerializeAsString().find("hunter2"), std::string::npos);
}

TEST(RedactSecrets, RedactsEverySecretOfASecretResource) {
  Secret secret;
  secret.set_name("s");
  secret.mutable_tls_certificate()->mutable_private_key()->set_filename("/etc/key.pem");
  secret.mutable_tls_certificate()->mutable_pkcs12()->set_inline_bytes("pkcs12-bytes");
  EXPECT_TRUE(RedactSecrets(secret));
  EXPECT_EQ(secret.tls_certificate().private_key().filename(), kRedacted);
  EXPECT_EQ(secret.tls_certificate().pkcs12().inline_bytes(), kRedacted);

  Secret tickets;
  tickets.mutable_session_ticket_keys()->add_keys()->set_inline_bytes("ticket-key-1");
  tickets.mutable_session_ticket_keys()->add_keys()->set_inline_bytes("ticket-key-2");
  EXPECT_TRUE(RedactSecrets(tickets));
  for (const auto& key : tickets.session_ticket_keys().keys())
    EXPECT_EQ(key.inline_bytes(), kRedacted);

  Secret generic;
  generic.mutable_generic_secret()->mutable_secret()->set_inline_string("api-key");
  EXPECT_TRUE(RedactSecrets(generic));
  EXPECT_EQ(generic.generic_secret().secret().inline_string(), kRedacted);
  EXPECT_EQ(generic.name(), "");
}

TEST(RedactSecrets, RedactsUnannotatedCallCredentials) {
  envoy::config::core::v3::GrpcService service;
  auto* google = service.mutable_google_grpc();
  google->set_target_uri("sts.example:443");
  google->add_call_credentials()->set_access_token("ya29.token");
  google->add_call_credentials()->mutable_google_iam()->set_authorization_token("iam-token");
  EXPECT_TRUE(RedactSecrets(service));
  EXPECT_EQ(service.google_grpc().call_credentials(0).access_token(), kRedacted);
  EXPECT_EQ(service.google_grpc().call_credentials(1).google_iam().authorization_token(),
            kRedacted);
  EXPECT_EQ(service.google_grpc().target_uri(), "sts.example:443");
}

// Everything under a secret field is secret, whatever its type; the names
// of a Struct's entries stay so the reader sees what was there.
TEST(RedactSecrets, EverythingUnderASecretFieldIsSecretButMapKeysStay) {
  google::protobuf::Struct config;
  (*config.mutable_fields())["key_id"].set_string_value("kms-key-material");
  (*config.mutable_fields())["retries"].set_number_value(3);
  TlsCertificate certificate;
  certificate.mutable_private_key_provider()->set_provider_name("kms");
  certificate.mutable_private_key_provider()->mutable_typed_config()->PackFrom(config);

  EXPECT_TRUE(RedactSecrets(certificate));

  google::protobuf::Struct shown;
  ASSERT_TRUE(certificate.private_key_provider().typed_config().UnpackTo(&shown));
  EXPECT_EQ(shown.fields().at("key_id").string_value(), kRedacted);
  EXPECT_EQ(shown.fields().at("retries").string_value(), kRedacted);
  EXPECT_EQ(certificate.private_key_provider().provider_name(), "kms");
}

TEST(RedactSecrets, ClearsAnUnreadableAnyUnderASecretField) {
  TlsCertificate certificate;
  auto* any = certificate.mutable_private_key_provider()->mutable_typed_config();
  any->set_type_url("type.googleapis.com/example.Unknown");
  any->set_value("opaque secret bytes");
  EXPECT_TRUE(RedactSecrets(certificate));
  EXPECT_EQ(certificate.private_key_provider().typed_config().value(), "");
}

TEST(RedactSecrets, LeavesMessagesWithoutSecretsAlone) {
  DownstreamTlsContext tls;
  tls.mutable_common_tls_context()
      ->add_tls_certificates()
      ->mutable_certificate_chain()
      ->set_filename("/etc/cert.pem");
  tls.mutable_require_client_certificate()->set_value(true);
  Listener listener;
  listener.set_name("plain");
  listener.add_filter_chains()->mutable_transport_socket()->mutable_typed_config()->PackFrom(tls);
  auto* unknown = listener.add_filter_chains()->add_filters()->mutable_typed_config();
  unknown->set_type_url("type.googleapis.com/example.Unknown");
  unknown->set_value("not secret");
  Listener original = listener;
  EXPECT_FALSE(RedactSecrets(listener));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(listener, original));
}

}  // namespace
}  // namespace holdfast
