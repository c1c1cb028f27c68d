import protobuf from 'protobufjs';

/**
 * The OTLP trace messages (opentelemetry-proto v1: collector/trace/v1/trace_service.proto,
 * trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto), the fields a trace
 * export carries, with their upstream numbers and types. Kept as text so the build needs no .proto
 * files beside the code; protobufjs parses it once. Fields not named here are skipped by the
 * decoder, as protobuf does with any unknown field.
 */
const OTLP_TRACE_PROTO = `
syntax = "proto3";
package opentelemetry.proto;

message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope {
  string name = 1;
  string version = 2;
  repeated KeyValue attributes = 3;
  uint32 dropped_attributes_count = 4;
}
message Resource {
  repeated KeyValue attributes = 1;
  uint32 dropped_attributes_count = 2;
}
message ResourceSpans {
  Resource resource = 1;
  repeated ScopeSpans scope_spans = 2;
  string schema_url = 3;
}
message ScopeSpans {
  InstrumentationScope scope = 1;
  repeated Span spans = 2;
  string schema_url = 3;
}
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  fixed32 flags = 16;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  uint32 dropped_attributes_count = 10;
  message Event {
    fixed64 time_unix_nano = 1;
    string name = 2;
    repeated KeyValue attributes = 3;
    uint32 dropped_attributes_count = 4;
  }
  repeated Event events = 11;
  uint32 dropped_events_count = 12;
  message Link {
    bytes trace_id = 1;
    bytes span_id = 2;
    string trace_state = 3;
    repeated KeyValue attributes = 4;
    uint32 dropped_attributes_count = 5;
    fixed32 flags = 6;
  }
  repeated Link links = 13;
  uint32 dropped_links_count = 14;
  Status status = 15;
}
message Status {
  string message = 2;
  int32 code = 3;
}
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`;

let requestType: protobuf.Type | undefined;

/**
 * An `ExportTraceServiceRequest` decoded into the shape of the OTLP JSON mapping (lowerCamelCase
 * names, int64 as decimal strings, enums as numbers); ids stay bytes (`Uint8Array`), where the
 * JSON mapping has hex. Throws on bytes that are not such a message.
 */
export function decodeExportTraceRequest(bytes: Uint8Array): Record<string, unknown> {
  requestType ??= protobuf.parse(OTLP_TRACE_PROTO).root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');
  const message = requestType.decode(bytes);
  return requestType.toObject(message, { longs: String, enums: Number, defaults: false, arrays: true, oneofs: false });
}
