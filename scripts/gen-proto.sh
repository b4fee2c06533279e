#!/usr/bin/env bash
# Regenerates the committed gRPC stubs of the plugin transport
# (internal/transport/pluginpb). Needs protoc (Debian: protobuf-compiler) and
# the Go generators, which this script installs into $(go env GOPATH)/bin
# when they are missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

command -v protoc >/dev/null || { echo "protoc not found (apt-get install -y protobuf-compiler)" >&2; exit 1; }

gobin=$(go env GOPATH)/bin
export PATH="$gobin:$PATH"
# Installed from outside the module so the project's go.mod is not touched.
if ! command -v protoc-gen-go >/dev/null; then
  (cd / && go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11)
fi
if ! command -v protoc-gen-go-grpc >/dev/null; then
  (cd / && go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2)
fi

protoc \
  --proto_path=internal/transport/pluginpb \
  --go_out=internal/transport/pluginpb --go_opt=paths=source_relative \
  --go-grpc_out=internal/transport/pluginpb --go-grpc_opt=paths=source_relative \
  internal/transport/pluginpb/plugin.proto

gofmt -l internal/transport/pluginpb
echo "generated internal/transport/pluginpb"
