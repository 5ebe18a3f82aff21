#!/bin/sh
# Runs one fuzz target (built by build.sh) on its seed corpus.
#   Fuzz/run.sh http1|json|msgpack|websocket|protobuf|grpc [libFuzzer options...]
# New inputs go to Fuzz/.build/work/<target> (the committed seeds stay as written),
# crashes to Fuzz/.build/crashes/<target>-*.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
target=$1; shift
case $target in http1|json|msgpack|websocket|protobuf|grpc) ;; *) echo "unknown fuzz target: $target (http1, json, msgpack, websocket, protobuf, grpc)" >&2; exit 2 ;; esac
mkdir -p "$here/.build/work/$target" "$here/.build/crashes"
# The Swift runtime's own backtracer would symbolicate every crash for minutes
# before libFuzzer could write the crashing input; libFuzzer's report is enough.
SWIFT_BACKTRACE=enable=no
export SWIFT_BACKTRACE
exec "$here/.build/$target-fuzz" -artifact_prefix="$here/.build/crashes/$target-" -print_final_stats=1 \
    $( [ -f "$here/$target.dict" ] && echo "-dict=$here/$target.dict" ) \
    "$@" "$here/.build/work/$target" "$here/corpus/$target"
