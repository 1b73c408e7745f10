# Generates C++ messages and Envoy's protoc-gen-validate validators for the
# closure of Envoy API protos holdfast uses, as one library: envoy_api.
#
# Inputs: HOLDFAST_PGV_PLUGIN, HOLDFAST_PGV_SOURCE (from scripts/setup.sh),
# the npm package @grpc/grpc-js-xds under node_modules (package-lock.json).
#
# HOLDFAST_PREBUILT_API names another build directory whose envoy_api and
# envoy_api_grpc are reused as they are (the sanitizer build does this: the
# generated code takes most of the build time and needs no instrumentation).
set(HOLDFAST_PREBUILT_API "" CACHE PATH "Build directory to take the generated API libraries from")
if(HOLDFAST_PREBUILT_API)
  foreach(lib envoy_api envoy_api_grpc)
    if(NOT EXISTS "${HOLDFAST_PREBUILT_API}/lib${lib}.a")
      message(FATAL_ERROR "${HOLDFAST_PREBUILT_API}/lib${lib}.a not found: build ${lib} there first")
    endif()
  endforeach()
  add_library(envoy_api STATIC IMPORTED)
  set_target_properties(envoy_api PROPERTIES IMPORTED_LOCATION "${HOLDFAST_PREBUILT_API}/libenvoy_api.a")
  target_include_directories(envoy_api SYSTEM INTERFACE "${HOLDFAST_PREBUILT_API}/gen" "${HOLDFAST_PGV_SOURCE}")
  target_link_libraries(envoy_api INTERFACE protobuf::libprotobuf PkgConfig::RE2)
  add_library(envoy_api_all INTERFACE)
  target_link_libraries(envoy_api_all INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,envoy_api>")
  add_library(envoy_api_grpc STATIC IMPORTED)
  set_target_properties(envoy_api_grpc PROPERTIES IMPORTED_LOCATION "${HOLDFAST_PREBUILT_API}/libenvoy_api_grpc.a")
  target_include_directories(envoy_api_grpc SYSTEM INTERFACE "${HOLDFAST_PREBUILT_API}/gen_grpc")
  target_link_libraries(envoy_api_grpc INTERFACE envoy_api_all PkgConfig::GRPCPP)
  return()
endif()

set(HOLDFAST_API_DEPS "${PROJECT_SOURCE_DIR}/node_modules/@grpc/grpc-js-xds/deps"
    CACHE PATH "deps/ of the @grpc/grpc-js-xds npm package")
if(NOT EXISTS "${HOLDFAST_API_DEPS}/envoy-api/envoy")
  message(FATAL_ERROR "Envoy API protos not found in ${HOLDFAST_API_DEPS}: run scripts/setup.sh")
endif()
if(NOT EXISTS "${HOLDFAST_PGV_PLUGIN}" OR NOT EXISTS "${HOLDFAST_PGV_SOURCE}/validate/validate.proto")
  message(FATAL_ERROR "protoc-gen-validate not found: run scripts/setup.sh")
endif()

# validate.proto comes from the protoc-gen-validate module (consistent with
# its validate.h); the npm package's copy is older than its Envoy protos.
set(ENVOY_PROTO_INCLUDES
    "${HOLDFAST_PGV_SOURCE}"
    "${HOLDFAST_API_DEPS}/envoy-api"
    "${HOLDFAST_API_DEPS}/xds"
    "${HOLDFAST_API_DEPS}/googleapis")

set(ENVOY_PROTO_ROOTS
    envoy/service/discovery/v3/ads.proto
    envoy/service/status/v3/csds.proto
    envoy/config/listener/v3/listener.proto
    envoy/config/route/v3/route.proto
    envoy/config/cluster/v3/cluster.proto
    envoy/config/endpoint/v3/endpoint.proto
    envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto
    envoy/extensions/filters/http/router/v3/router.proto
    envoy/extensions/filters/http/cors/v3/cors.proto
    envoy/extensions/transport_sockets/tls/v3/tls.proto
    envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto
    envoy/extensions/upstreams/http/v3/http_protocol_options.proto
    envoy/extensions/load_balancing_policies/round_robin/v3/round_robin.proto
    envoy/extensions/load_balancing_policies/ring_hash/v3/ring_hash.proto
    envoy/extensions/load_balancing_policies/least_request/v3/least_request.proto)

set(_closure_args)
foreach(dir ${ENVOY_PROTO_INCLUDES})
  list(APPEND _closure_args --include "${dir}")
endforeach()
execute_process(
  COMMAND python3 "${PROJECT_SOURCE_DIR}/cmake/proto_closure.py" ${_closure_args}
          --include /usr/include --skip google/protobuf/ ${ENVOY_PROTO_ROOTS}
  OUTPUT_VARIABLE ENVOY_PROTO_FILES
  RESULT_VARIABLE _closure_rc)
if(NOT _closure_rc EQUAL 0)
  message(FATAL_ERROR "proto closure failed")
endif()

set(_gen "${CMAKE_BINARY_DIR}/gen")
set(_outputs)
set(_inputs)
foreach(proto ${ENVOY_PROTO_FILES})
  string(REGEX REPLACE "\\.proto$" "" base "${proto}")
  list(APPEND _outputs "${_gen}/${base}.pb.cc" "${_gen}/${base}.pb.h")
  if(NOT proto STREQUAL "validate/validate.proto")
    list(APPEND _outputs "${_gen}/${base}.pb.validate.cc" "${_gen}/${base}.pb.validate.h")
  endif()
endforeach()

set(_protoc_includes)
foreach(dir ${ENVOY_PROTO_INCLUDES})
  list(APPEND _protoc_includes "-I${dir}")
endforeach()
list(REMOVE_ITEM ENVOY_PROTO_FILES validate/validate.proto)

add_custom_command(
  OUTPUT ${_outputs}
  COMMAND ${CMAKE_COMMAND} -E make_directory "${_gen}"
  COMMAND protobuf::protoc ${_protoc_includes} --cpp_out=${_gen} validate/validate.proto ${ENVOY_PROTO_FILES}
  COMMAND protobuf::protoc ${_protoc_includes} --plugin=protoc-gen-validate=${HOLDFAST_PGV_PLUGIN}
          --validate_out=lang=cc:${_gen} ${ENVOY_PROTO_FILES}
  DEPENDS "${PROJECT_SOURCE_DIR}/package-lock.json" "${HOLDFAST_PGV_PLUGIN}"
  COMMENT "Generating Envoy API messages and validators"
  VERBATIM)

# Generated code is not ours to warn about, and it is big: build it once, -O1,
# without debug information (nobody steps through generated messages).
# The one reader of the validators' registry is built with them
# (src/translate/registered_validators.h says why).
add_library(envoy_api STATIC ${_outputs} "${PROJECT_SOURCE_DIR}/src/translate/registered_validators.cc")
target_include_directories(envoy_api PRIVATE "${PROJECT_SOURCE_DIR}")
target_include_directories(envoy_api SYSTEM PUBLIC "${_gen}" "${HOLDFAST_PGV_SOURCE}")
target_link_libraries(envoy_api PUBLIC protobuf::libprotobuf PkgConfig::RE2)
target_compile_options(envoy_api PRIVATE -w -O1 -g0)

# Generated messages and validators register themselves at static init, and
# JSON parsing finds Any types there: keep every object in the link.
add_library(envoy_api_all INTERFACE)
target_link_libraries(envoy_api_all INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,envoy_api>")

# gRPC client stubs for the discovery services, for tests that play a proxy.
# Separate from envoy_api so that adding them never regenerates the messages.
set(ENVOY_SERVICE_PROTOS
    envoy/service/listener/v3/lds.proto
    envoy/service/route/v3/rds.proto
    envoy/service/cluster/v3/cds.proto
    envoy/service/endpoint/v3/eds.proto)
# The services import HTTP annotations (REST mapping), which need messages.
set(ENVOY_SERVICE_DEPS google/api/annotations.proto google/api/http.proto envoy/annotations/resource.proto)
set(_grpc_gen "${CMAKE_BINARY_DIR}/gen_grpc")
set(_grpc_outputs "${_grpc_gen}/envoy/service/discovery/v3/ads.grpc.pb.cc")
foreach(proto ${ENVOY_SERVICE_PROTOS})
  string(REGEX REPLACE "\\.proto$" "" base "${proto}")
  list(APPEND _grpc_outputs "${_grpc_gen}/${base}.pb.cc" "${_grpc_gen}/${base}.grpc.pb.cc")
endforeach()
foreach(proto ${ENVOY_SERVICE_DEPS})
  string(REGEX REPLACE "\\.proto$" "" base "${proto}")
  list(APPEND _grpc_outputs "${_grpc_gen}/${base}.pb.cc")
endforeach()
add_custom_command(
  OUTPUT ${_grpc_outputs}
  COMMAND ${CMAKE_COMMAND} -E make_directory "${_grpc_gen}"
  COMMAND protobuf::protoc ${_protoc_includes} --cpp_out=${_grpc_gen} ${ENVOY_SERVICE_PROTOS} ${ENVOY_SERVICE_DEPS}
  COMMAND protobuf::protoc ${_protoc_includes} --grpc_out=${_grpc_gen}
          --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN}
          envoy/service/discovery/v3/ads.proto ${ENVOY_SERVICE_PROTOS}
  DEPENDS "${PROJECT_SOURCE_DIR}/package-lock.json"
  COMMENT "Generating Envoy discovery service stubs"
  VERBATIM)
add_library(envoy_api_grpc STATIC ${_grpc_outputs})
target_include_directories(envoy_api_grpc SYSTEM PUBLIC "${_grpc_gen}")
target_link_libraries(envoy_api_grpc PUBLIC envoy_api_all PkgConfig::GRPCPP)
target_compile_options(envoy_api_grpc PRIVATE -w)
