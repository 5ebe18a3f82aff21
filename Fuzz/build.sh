#!/bin/sh
# Builds the libFuzzer targets with swiftc directly: `-sanitize=fuzzer -parse-as-library`
# clashes with SwiftPM executables (see notes-libevent-systemd.md, "Swift on Linux").
# Each target is compiled into one module together with the sources it tests, so
# internal API is reachable and no SwiftPM build is involved.
#   Fuzz/build.sh [http1|json|msgpack|websocket|protobuf|grpc]...   (default: all)   → Fuzz/.build/<target>-fuzz
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out="$here/.build"
mkdir -p "$out"
SWIFTC=${SWIFTC:-swiftc}
# lld: gold prints a warning for every ASan helper symbol.
# -package-name: HTTP1 has `package` declarations (DecimalText, shared with ExchangeLog).
flags="-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 5 -use-ld=lld -package-name Tapwire"

build_http1() {
    # Every file of the HTTP1 target: they form one module with no imports.
    $SWIFTC $flags -module-name HTTP1Fuzz -o "$out/http1-fuzz" \
        "$root"/Sources/HTTP1/*.swift "$here/Invariant.swift" "$here/HTTP1Fuzz/HTTP1FuzzTarget.swift"
}

build_json() {
    # The JSON value, parser, writer and compactor need nothing else from ResponseSerialization
    # (JSONParser imports Foundation only for its `Data` overload) but CJSONScan's header-only
    # byte scans, found through its module map.
    rs="$root/Sources/ResponseSerialization"
    $SWIFTC $flags -module-name JSONFuzz -o "$out/json-fuzz" -I "$root/Sources/CJSONScan/include" \
        "$rs/JSON.swift" "$rs/JSONParser.swift" "$rs/JSONWriter.swift" "$rs/JSONCompactor.swift" "$here/Invariant.swift" "$here/JSONDepth.swift" \
        "$here/JSONFuzz/JSONFuzzTarget.swift"
}

build_msgpack() {
    # The decoder makes the JSON value; the parser (which uses a compactor helper, and so
    # CJSONScan's header) and the writer check its text.
    rs="$root/Sources/ResponseSerialization"
    $SWIFTC $flags -module-name MsgPackFuzz -o "$out/msgpack-fuzz" -I "$root/Sources/CJSONScan/include" \
        "$rs/JSON.swift" "$rs/JSONParser.swift" "$rs/JSONWriter.swift" "$rs/JSONCompactor.swift" \
        "$rs/MsgPackError.swift" "$rs/MsgPackTimestamp.swift" "$rs/MsgPackDecoder.swift" \
        "$here/Invariant.swift" "$here/JSONDepth.swift" "$here/MsgPackFuzz/MsgPackFuzzTarget.swift"
}

build_websocket() {
    # The frame and message parsers and the inflater; zlib through CZlib's module map.
    $SWIFTC $flags -module-name WebSocketFuzz -o "$out/websocket-fuzz" -I "$root/Sources/CZlib" \
        "$root"/Sources/WebSocket/*.swift "$here/Invariant.swift" "$here/WebSocketFuzz/WebSocketFuzzTarget.swift" -lz
}

build_protobuf() {
    # The schema-less decoder makes the JSON value; the parser and writer check its text.
    rs="$root/Sources/ResponseSerialization"
    $SWIFTC $flags -module-name ProtobufFuzz -o "$out/protobuf-fuzz" -I "$root/Sources/CJSONScan/include" \
        "$rs/JSON.swift" "$rs/JSONParser.swift" "$rs/JSONWriter.swift" "$rs/JSONCompactor.swift" \
        "$rs/ProtobufRawDecoder.swift" "$here/Invariant.swift" "$here/JSONDepth.swift" \
        "$here/ProtobufFuzz/ProtobufFuzzTarget.swift"
}

build_grpc() {
    $SWIFTC $flags -module-name GRPCFuzz -o "$out/grpc-fuzz" \
        "$root/Sources/ResponseSerialization/GRPCMessages.swift" "$here/Invariant.swift" \
        "$here/GRPCFuzz/GRPCFuzzTarget.swift"
}

targets=${*:-http1 json msgpack websocket protobuf grpc}
for t in $targets; do
    case $t in
    http1) build_http1 ;;
    json) build_json ;;
    msgpack) build_msgpack ;;
    websocket) build_websocket ;;
    protobuf) build_protobuf ;;
    grpc) build_grpc ;;
    *) echo "unknown fuzz target: $t (http1, json, msgpack, websocket, protobuf, grpc)" >&2; exit 2 ;;
    esac
    echo "built $out/$t-fuzz"
done
