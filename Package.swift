// swift-tools-version:6.0
// Tapwire: a local HTTP inspection proxy. Only the toolchain's own modules and
// Debian's C libraries (through system-library targets) are used.
import PackageDescription

let package = Package(
    name: "Tapwire",
    products: [
        .executable(name: "tapwire", targets: ["tapwire"]),
        .library(name: "ResponseSerialization", targets: ["ResponseSerialization"]),
        .library(name: "HTTP1", targets: ["HTTP1"]),
    ],
    targets: [
        // C libraries from Debian, found through pkg-config.
        .systemLibrary(name: "CLibevent", pkgConfig: "libevent",
                       providers: [.apt(["libevent-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CBrotli", pkgConfig: "libbrotlidec", providers: [.apt(["libbrotli-dev"])]),
        .systemLibrary(name: "CIsal", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // glibc's GNU extensions (malloc_trim, pthread_setname_np): part of libc, nothing to install or link.
        .systemLibrary(name: "CGlibcExtensions"),

        // Pure logic: no threads, files or sockets; tested and fuzzed on bytes.
        .target(name: "HTTP1"),
        // SSE2 byte-class scans (header-only, inlined into Swift) for the JSON scanners.
        .target(name: "CJSONScan"),
        .target(name: "ResponseSerialization",
                dependencies: ["HTTP1", "CJSONScan", "CZlib", "CBrotli", "CZstd"]),
        // WebSocket frames (RFC 6455) and permessage-deflate (RFC 7692): chunks of one direction in, messages out.
        .target(name: "WebSocket", dependencies: ["CZlib"]),
        // The log: pure rules and record encoding, plus the worker, writer and archiver
        // threads and the log files. LogTools reads the files back (and replays requests, over TLS for https:// records).
        .target(name: "ExchangeLog", dependencies: ["ResponseSerialization", "HTTP1", "WebSocket", "CZlib", "CIsal", "CGlibcExtensions"]),
        .target(name: "LogTools", dependencies: ["ExchangeLog", "ResponseSerialization", "HTTP1", "CIsal", "TLSInterception"]),

        // I/O: event loops, sockets, upstream pool.
        .target(name: "ProxyEngine", dependencies: ["CLibevent", "HTTP1", "CGlibcExtensions", "CNghttp2"]),

        // HTTPS interception: the local CA, per-host leaf certificates, origin verification.
        .target(name: "TLSInterception", dependencies: ["COpenSSL"]),

        // The config file, validated into the values the engine and the log use.
        .target(name: "Configuration", dependencies: ["ProxyEngine", "ExchangeLog", "ResponseSerialization", "Viewer"]),

        // The web viewer: its page (Assets/, embedded in the binary) and JSON API over the log,
        // served on its own threads.
        .target(name: "Viewer", dependencies: ["LogTools", "ExchangeLog", "ResponseSerialization", "HTTP1", "ProxyEngine", "CGlibcExtensions"],
                resources: [.embedInCode("Assets/viewer.html"), .embedInCode("Assets/viewer.js"), .embedInCode("Assets/viewer.css")]),

        // systemd integration: sd_notify and socket activation without libsystemd.
        .target(name: "Systemd"),

        .executableTarget(name: "tapwire",
                          dependencies: ["Configuration", "ProxyEngine", "ExchangeLog", "LogTools", "ResponseSerialization", "HTTP1",
                                         "Systemd", "TLSInterception", "COpenSSL", "Viewer"]),
        .executableTarget(name: "JSONBenchmark", dependencies: ["ResponseSerialization"], path: "Benchmarks/JSONBenchmark"),
        .executableTarget(name: "RecordBenchmark", dependencies: ["ExchangeLog", "HTTP1"], path: "Benchmarks/RecordBenchmark"),

        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"], exclude: ["Resources"]),
        .testTarget(name: "ResponseSerializationTests", dependencies: ["ResponseSerialization"], exclude: ["Resources"]),
        .testTarget(name: "ExchangeLogTests", dependencies: ["ExchangeLog"]),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket", "CZlib"]),
        .testTarget(name: "LogToolsTests", dependencies: ["LogTools"], exclude: ["Resources"]),
        .testTarget(name: "ProxyEngineTests", dependencies: ["ProxyEngine", "HTTP1", "TLSInterception"]),
        .testTarget(name: "ConfigurationTests", dependencies: ["Configuration"]),
        .testTarget(name: "EndToEndTests", dependencies: ["HTTP1"], exclude: ["Resources"]),
        .testTarget(name: "SystemdTests", dependencies: ["Systemd"]),
        .testTarget(name: "ViewerTests", dependencies: ["Viewer", "LogTools", "ExchangeLog", "ResponseSerialization"]),
        .testTarget(name: "TLSInterceptionTests", dependencies: ["TLSInterception"]),
    ],
    swiftLanguageModes: [.v5]
)
