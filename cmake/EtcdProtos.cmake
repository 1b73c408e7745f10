# Generates C++ messages and gRPC stubs for the etcd v3 API (KV, Watch, Lease,
# Auth, Maintenance) as one library: etcd_api.
#
# Input: HOLDFAST_ETCD_API_SOURCE, the go.etcd.io directory of Debian's
# golang-etcd-server-dev (pinned in scripts/versions.sh; scripts/setup.sh
# extracts it). Go-only options are stripped first (strip_proto_options.py).
set(HOLDFAST_ETCD_API_SOURCE "" CACHE PATH "go.etcd.io directory holding etcd/etcdserver/etcdserverpb/rpc.proto")
if(NOT EXISTS "${HOLDFAST_ETCD_API_SOURCE}/etcd/etcdserver/etcdserverpb/rpc.proto")
  message(FATAL_ERROR "etcd API protos not found in '${HOLDFAST_ETCD_API_SOURCE}': run scripts/setup.sh")
endif()

set(ETCD_PROTOS
    etcd/etcdserver/etcdserverpb/rpc.proto
    etcd/mvcc/mvccpb/kv.proto
    etcd/auth/authpb/auth.proto)
set(_etcd_src "${CMAKE_BINARY_DIR}/etcd_proto")
set(_etcd_gen "${CMAKE_BINARY_DIR}/etcd_gen")
set(_etcd_inputs)
set(_etcd_stripped)
set(_etcd_outputs)
foreach(proto ${ETCD_PROTOS})
  string(REGEX REPLACE "\\.proto$" "" base "${proto}")
  list(APPEND _etcd_inputs "${HOLDFAST_ETCD_API_SOURCE}/${proto}")
  list(APPEND _etcd_stripped "${_etcd_src}/${proto}")
  list(APPEND _etcd_outputs "${_etcd_gen}/${base}.pb.cc" "${_etcd_gen}/${base}.pb.h")
endforeach()
list(APPEND _etcd_outputs
     "${_etcd_gen}/etcd/etcdserver/etcdserverpb/rpc.grpc.pb.cc"
     "${_etcd_gen}/etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h")

add_custom_command(
  OUTPUT ${_etcd_outputs}
  COMMAND python3 "${PROJECT_SOURCE_DIR}/cmake/strip_proto_options.py"
          "${HOLDFAST_ETCD_API_SOURCE}" "${_etcd_src}" ${ETCD_PROTOS}
  COMMAND ${CMAKE_COMMAND} -E make_directory "${_etcd_gen}"
  COMMAND protobuf::protoc "-I${_etcd_src}" --cpp_out=${_etcd_gen} ${ETCD_PROTOS}
  COMMAND protobuf::protoc "-I${_etcd_src}" --grpc_out=${_etcd_gen}
          --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN} etcd/etcdserver/etcdserverpb/rpc.proto
  DEPENDS ${_etcd_inputs} "${PROJECT_SOURCE_DIR}/cmake/strip_proto_options.py"
  COMMENT "Generating etcd v3 API messages and stubs"
  VERBATIM)

add_library(etcd_api STATIC ${_etcd_outputs})
target_include_directories(etcd_api SYSTEM PUBLIC "${_etcd_gen}")
target_link_libraries(etcd_api PUBLIC protobuf::libprotobuf PkgConfig::GRPCPP)
target_compile_options(etcd_api PRIVATE -w)
