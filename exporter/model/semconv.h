/* SPDX-License-Identifier: MIT */
/* OpenTelemetry semantic-convention names, in one place so every module spells them the same. */
#ifndef GOSPAN_SEMCONV_H
#define GOSPAN_SEMCONV_H

/* HTTP (semantic conventions, stable HTTP spans). */
#define SC_HTTP_REQUEST_METHOD "http.request.method"
#define SC_HTTP_REQUEST_METHOD_ORIGINAL "http.request.method_original"
#define SC_HTTP_RESPONSE_STATUS_CODE "http.response.status_code"
#define SC_HTTP_ROUTE "http.route"
#define SC_HTTP_REQUEST_BODY_SIZE "http.request.body.size"
#define SC_URL_PATH "url.path"
#define SC_URL_SCHEME "url.scheme"
#define SC_URL_FULL "url.full"
#define SC_SERVER_ADDRESS "server.address"
#define SC_SERVER_PORT "server.port"
#define SC_CLIENT_ADDRESS "client.address"
#define SC_CLIENT_PORT "client.port"
#define SC_RPC_SYSTEM "rpc.system"
#define SC_RPC_SERVICE "rpc.service"
#define SC_RPC_METHOD "rpc.method"
#define SC_RPC_GRPC_STATUS_CODE "rpc.grpc.status_code"
#define SC_NETWORK_PEER_ADDRESS "network.peer.address"
#define SC_NETWORK_PEER_PORT "network.peer.port"
#define SC_NETWORK_PROTOCOL_NAME "network.protocol.name"
#define SC_NETWORK_PROTOCOL_VERSION "network.protocol.version"
#define SC_ERROR_TYPE "error.type"

/* Database client spans (semantic conventions v1.33+, stable for these). */
#define SC_DB_SYSTEM_NAME "db.system.name"
#define SC_DB_QUERY_TEXT "db.query.text"
#define SC_DB_OPERATION_NAME "db.operation.name"
#define SC_DB_COLLECTION_NAME "db.collection.name"
#define SC_DB_QUERY_SUMMARY "db.query.summary"
#define SC_DB_STORED_PROCEDURE_NAME "db.stored_procedure.name"
#define SC_DB_OPERATION_BATCH_SIZE "db.operation.batch.size"
#define SC_DB_RESPONSE_STATUS_CODE "db.response.status_code"

/*
 * Messaging (semantic conventions v1.37, development): Kafka producer and consumer spans, named
 * "{messaging.operation.name} {destination}" ("send orders", "process orders").
 */
#define SC_MESSAGING_SYSTEM "messaging.system"
#define SC_MESSAGING_OPERATION_NAME "messaging.operation.name"
#define SC_MESSAGING_OPERATION_TYPE "messaging.operation.type"
#define SC_MESSAGING_DESTINATION_NAME "messaging.destination.name"
#define SC_MESSAGING_DESTINATION_PARTITION_ID "messaging.destination.partition.id"
#define SC_MESSAGING_KAFKA_OFFSET "messaging.kafka.offset"
#define SC_MESSAGING_KAFKA_MESSAGE_KEY "messaging.kafka.message.key"
#define SC_MESSAGING_CONSUMER_GROUP_NAME "messaging.consumer.group.name"
#define SC_MESSAGING_BATCH_MESSAGE_COUNT "messaging.batch.message_count"

/* Resource. */
#define SC_SERVICE_NAME "service.name"
#define SC_SERVICE_NAMESPACE "service.namespace"
#define SC_SERVICE_INSTANCE_ID "service.instance.id"
#define SC_TELEMETRY_SDK_NAME "telemetry.sdk.name"
#define SC_TELEMETRY_SDK_LANGUAGE "telemetry.sdk.language"
#define SC_TELEMETRY_SDK_VERSION "telemetry.sdk.version"
#define SC_PROCESS_PID "process.pid"
#define SC_PROCESS_EXECUTABLE_NAME "process.executable.name"
#define SC_PROCESS_EXECUTABLE_PATH "process.executable.path"
#define SC_PROCESS_RUNTIME_NAME "process.runtime.name"
#define SC_PROCESS_RUNTIME_VERSION "process.runtime.version"
#define SC_HOST_NAME "host.name"
/*
 * Container and Kubernetes (container.id beta, the others in development). The conventions
 * replaced container.runtime by container.runtime.name, and deprecated the former: only the
 * new name is sent. Its example values are "docker" and "containerd"; "cri-o" and "podman"
 * are the projects' own names for themselves.
 */
#define SC_CONTAINER_ID "container.id"
#define SC_CONTAINER_RUNTIME_NAME "container.runtime.name"
#define SC_K8S_POD_UID "k8s.pod.uid"

/*
 * Code (semantic conventions v1.33+, stable): the fully qualified function name. The older
 * code.namespace and code.function were folded into it and are not sent.
 */
#define SC_CODE_FUNCTION_NAME "code.function.name"

/* gospan's own: which attributes hold values cut to the capture bound. */
#define GOSPAN_TRUNCATED "gospan.truncated"
/* Time the span's goroutine was running (_Grunning) between its start and end (--cpu-time). */
#define GOSPAN_CPU_TIME_NS "gospan.cpu_time_ns"
/* A recorded function argument: "gospan.arg." and its name or path ("gospan.arg.o.ID"). */
#define GOSPAN_ARG_PREFIX "gospan.arg."

#endif
