package main

// The two Echo messages are encoded by hand with protowire so this module
// needs no generated code (and no protoc-gen-go) to build. They must match
// proto/holdfast/test/echo.proto:
//
//	message EchoRequest { string message = 1; }
//	message EchoReply   { string backend = 1; string message = 2; }

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

func encodeEchoRequest(message string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendString(b, message)
}

func decodeEchoReplyBackend(b []byte) (string, error) {
	backend := ""
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeString(b)
			if m < 0 {
				return "", protowire.ParseError(m)
			}
			backend = v
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return "", protowire.ParseError(m)
		}
		b = b[m:]
	}
	if backend == "" {
		return "", fmt.Errorf("EchoReply without backend")
	}
	return backend, nil
}

// rawCodec passes already-encoded messages through: requests are []byte,
// replies land in a *[]byte.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*p = data.Materialize()
	return nil
}

var _ encoding.CodecV2 = rawCodec{}
