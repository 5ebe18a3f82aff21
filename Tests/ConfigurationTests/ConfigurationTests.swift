import Configuration
import ExchangeLog
import Foundation
import ProxyEngine
import ResponseSerialization
import Viewer
import XCTest

final class ConfigurationTests: XCTestCase {
    private func parse(_ text: String) -> Result<TapwireConfiguration, ConfigErrorList> {
        TapwireConfiguration.parse(Array(text.utf8))
    }

    private func errors(_ text: String) -> [String] {
        if case .failure(let list) = parse(text) { return list.errors.map(\.description) }
        return []
    }

    func testShippedSampleIsValidAndMatchesTheDocumentedDefaults() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/tapwire.json").path
        let config = try TapwireConfiguration.load(path: path).get()
        XCTAssertEqual(config.engine.listen, ["127.0.0.1:8080"])
        XCTAssertEqual(config.engine.maxHeaderBytes, 65536)
        XCTAssertEqual(config.engine.captureMaxBodyBytes, 1_048_576)
        XCTAssertEqual(config.log.directory, "logs")
        XCTAssertEqual(config.rules.map(\.name), ["github-api", "problem-details", "legacy-text", "openai-chat-stream: assembled completion text, first 100 events",
                                               "server-events", "binary-downloads",
                                               "socket-messages: the app at /socket sends MessagePack over WebSocket"])
        XCTAssertTrue(config.rules[6].match.websocket)
        XCTAssertEqual(config.rules[0].select.count, 2)
        XCTAssertEqual(config.rules[2].serializer.encoding, "windows-1252")
        XCTAssertEqual(config.rules[3].serializer.assemble?.description, "/choices/0/delta/content")
        XCTAssertEqual(config.rules[3].serializer.maxEvents, 100)
        XCTAssertEqual(config.rules[5].serializer.base64Bytes, 256)
    }

    func testEmptyObjectGivesBuiltInDefaults() throws {
        let c = try parse("{}").get()
        // The engine alone runs its loops at the process's priority; the config's default
        // makes them yield to logging (`log.loopNice`).
        var engine = EngineConfiguration()
        XCTAssertEqual(engine.loopNice, 0)
        engine.loopNice = TapwireConfiguration.defaultLoopNice
        XCTAssertEqual(c.engine, engine)
        XCTAssertEqual(c.log, LogSettings())
        XCTAssertEqual(c.redactHeaders, ["authorization", "proxy-authorization", "cookie", "set-cookie"])
    }

    func testViewerKeysTheirDefaultsAndErrors() throws {
        let defaults = try parse("{}").get().viewer
        XCTAssertEqual(defaults, ViewerSettings())
        XCTAssertTrue(defaults.enabled)
        XCTAssertEqual(defaults.maxConnections, 32)
        XCTAssertEqual(defaults.idleTimeout, 60)
        let set = try parse(#"{"viewer": {"enabled": false, "maxConnections": 4, "idleTimeout": 2.5}}"#).get().viewer
        XCTAssertEqual(set.enabled, false)
        XCTAssertEqual(set.maxConnections, 4)
        XCTAssertEqual(set.idleTimeout, 2.5)
        let e = errors(#"{"viewer": {"enabled": "yes", "maxConnections": 0, "idleTimeout": -1, "listen": "x"}}"#)
        for path in ["viewer.enabled", "viewer.maxConnections", "viewer.idleTimeout", "viewer.listen"] {
            XCTAssertTrue(e.contains { $0.hasPrefix(path + ":") }, "missing \(path) in \(e)")
        }
        XCTAssertEqual(defaults.maxRequestBytes, 65536)
        XCTAssertEqual(defaults.pollInterval, 0.1)
        XCTAssertEqual(defaults.maxRowsPerLook, 500)
        XCTAssertEqual(defaults.maxQueuedRows, 20_000)
        XCTAssertEqual(defaults.maxBytesPerLook, 8 << 20)
        XCTAssertEqual(defaults.heartbeatInterval, 15)
        let live = try parse(#"{"viewer": {"maxRequestBytes": 4096, "pollInterval": 0.5, "maxRowsPerLook": 100, "maxQueuedRows": 100, "maxBytesPerLook": 65536, "heartbeatInterval": 2}}"#).get().viewer
        XCTAssertEqual([live.maxRequestBytes, live.maxRowsPerLook, live.maxQueuedRows, live.maxBytesPerLook], [4096, 100, 100, 65536])
        XCTAssertEqual([live.pollInterval, live.heartbeatInterval], [0.5, 2])
        let bad = errors(#"{"viewer": {"maxRequestBytes": 10, "pollInterval": 60, "maxRowsPerLook": 0, "maxBytesPerLook": 1, "heartbeatInterval": 0}}"#)
        for path in ["viewer.maxRequestBytes", "viewer.pollInterval", "viewer.maxRowsPerLook", "viewer.maxBytesPerLook", "viewer.heartbeatInterval"] {
            XCTAssertTrue(bad.contains { $0.hasPrefix(path + ":") }, "missing \(path) in \(bad)")
        }
        let short = errors(#"{"viewer": {"maxRowsPerLook": 600, "maxQueuedRows": 100}}"#)
        XCTAssertEqual(short.count, 1, "\(short)")
        XCTAssertTrue(short.first?.hasPrefix("viewer.maxQueuedRows: must be at least viewer.maxRowsPerLook") ?? false, "\(short)")
    }

    func testUnknownKeysAreErrorsWithTheirPath() {
        XCTAssertEqual(errors(#"{"lissen": []}"#).first?.hasPrefix("lissen: unknown key"), true)
        XCTAssertEqual(errors(#"{"limits": {"maxHeaderByte": 1}}"#).first?.hasPrefix("limits.maxHeaderByte: unknown key"), true)
        XCTAssertEqual(errors(#"{"rules": [{"name": "a", "serializer": {"type": "json"}, "mtch": {}}]}"#).first?.hasPrefix("rules[0].mtch: unknown key"), true)
    }

    func testEveryErrorIsReportedWithItsPath() {
        let e = errors(#"""
        {"listen": ["localhost:80"], "limits": {"maxConnections": 0, "clientIdleTimeout": "soon"},
         "log": {"rotateInterval": "weekly"},
         "rules": [{"name": "r0", "serializer": {"type": "json"}},
                   {"name": "r1", "serializer": {"type": "yaml"}},
                   {"name": "r2", "match": {"status": ["4xx", "abc"]}, "serializer": {"type": "json"}},
                   {"name": "r3", "serializer": {"type": "string", "encoding": "klingon"}},
                   {"name": "r4", "select": ["no-slash"], "serializer": {"type": "json"}},
                   {"serializer": {"type": "json"}}]}
        """#)
        let paths = e.map { String($0.prefix { $0 != ":" || false }) }
        for expected in ["listen[0]", "limits.maxConnections", "limits.clientIdleTimeout", "log.rotateInterval",
                         "rules[1].serializer.type", "rules[2].match.status[1]", "rules[3].serializer.encoding",
                         "rules[4].select[0]", "rules[5].name"] {
            XCTAssertTrue(e.contains { $0.hasPrefix(expected + ":") }, "missing \(expected) in \(e)")
        }
        XCTAssertEqual(e.count, 9, "\(e) \(paths)")
    }

    /// Patterns that could never match, and lists that would refuse everything, are errors
    /// with their path instead of rules that silently do nothing.
    func testRulePatternsThatCouldNeverMatchAreRefused() {
        let e = errors(#"""
        {"rules": [{"name": "a", "match": {"host": "localhost:8080", "path": "v1/*"}, "serializer": {"type": "json"}},
                   {"name": "b", "match": {"host": "[::1]", "path": "/search?q=*"}, "serializer": {"type": "json"}},
                   {"name": "c", "match": {"contentType": "text/html; charset=utf-8", "headers": ["X-Foo: bar"]}, "serializer": {"type": "json"}},
                   {"name": "dot", "match": {"host": "api.example.com."}, "serializer": {"type": "json"}},
                   {"name": "d", "validate": {}, "serializer": {"type": "json"}},
                   {"name": "e", "validate": {"statusCode": [], "contentType": []}, "serializer": {"type": "json"}},
                   {"name": "f", "select": ["/a"], "serializer": {"type": "string"}},
                   {"name": "g", "redact": ["/a"], "serializer": {"type": "none"}},
                   {"name": "ok", "match": {"host": "::1", "path": "*.json"}, "redact": ["/a"], "serializer": {"type": "string"}}]}
        """#)
        XCTAssertEqual(e.map { String($0.prefix { $0 != ":" }) }, [
            "rules[0].match.host", "rules[0].match.path", "rules[1].match.host", "rules[1].match.path",
            "rules[2].match.headers[0]", "rules[4].validate",
            "rules[5].validate.statusCode", "rules[5].validate.contentType", "rules[6].select", "rules[7].redact",
        ], "\(e)")
        // Parameters in match.contentType are ignored, as before; a trailing dot in a host
        // pattern goes, as it does from request hosts.
        let c = try? parse(#"{"rules": [{"name": "a", "match": {"host": "api.example.com.", "contentType": "application/json; charset=utf-8"}, "serializer": {"type": "json"}}]}"#).get()
        XCTAssertEqual(c?.rules.first?.match.contentType?.first?.matches("application/json"), true)
        XCTAssertEqual(c?.rules.first?.match.host?.matches("api.example.com"), true)
        let star = try? parse(#"{"rules": [{"name": "a", "match": {"host": "*."}, "serializer": {"type": "json"}}]}"#).get()
        XCTAssertEqual(star?.rules.first?.match.host?.matches("example.com"), false, "`*.` is not `*`")
    }

    /// Each serializer option belongs to one serializer; on another it is an error, not a no-op.
    func testSerializerOptionsOfAnotherSerializerAreRefused() {
        XCTAssertEqual(errors(#"""
        {"rules": [{"name": "a", "serializer": {"type": "json", "base64Bytes": 16}},
                   {"name": "b", "serializer": {"type": "string", "allowFragments": false}},
                   {"name": "c", "serializer": {"type": "data", "encoding": "utf-8"}},
                   {"name": "d", "serializer": {"type": "data", "base64Bytes": 16}},
                   {"name": "e", "serializer": {"type": "json", "allowFragments": false}}]}
        """#), ["rules[0].serializer.base64Bytes: only applies to the data serializer",
                "rules[1].serializer.allowFragments: only applies to the json serializer",
                "rules[2].serializer.encoding: only applies to the string serializer"])
        XCTAssertEqual(errors(#"""
        {"rules": [{"name": "a", "serializer": {"type": "json", "maxDepth": 8}},
                   {"name": "b", "serializer": {"type": "msgpack", "assemble": "/t"}},
                   {"name": "c", "serializer": {"type": "jsonLines", "maxEvents": 5}},
                   {"name": "d", "serializer": {"type": "msgpack", "maxDepth": 8}},
                   {"name": "e", "serializer": {"type": "eventStream", "assemble": "/t", "maxEvents": 5}}]}
        """#), ["rules[0].serializer.maxDepth: only applies to the msgpack serializer",
                "rules[1].serializer.assemble: only applies to the eventStream serializer",
                "rules[2].serializer.maxEvents: only applies to the eventStream serializer"])
    }

    func testMsgPackAndEventStreamOptions() throws {
        let config = try parse(#"""
        {"rules": [{"name": "m", "serializer": {"type": "msgpack", "maxDepth": 16}, "select": ["/a"]},
                   {"name": "m2", "serializer": {"type": "msgpack"}},
                   {"name": "s", "serializer": {"type": "eventStream", "assemble": "/choices/0/delta/content", "maxEvents": 0}},
                   {"name": "s2", "serializer": {"type": "eventStream"}}]}
        """#).get()
        XCTAssertEqual(config.rules.map(\.serializer.kind), [.msgpack, .msgpack, .eventStream, .eventStream])
        XCTAssertEqual(config.rules[0].serializer.maxDepth, 16)
        XCTAssertEqual(config.rules[1].serializer.maxDepth, MsgPackDecoder.defaultMaxDepth)
        XCTAssertEqual(config.rules[2].serializer.assemble, try JSONPointer("/choices/0/delta/content"))
        XCTAssertEqual(config.rules[2].serializer.maxEvents, 0)
        XCTAssertNil(config.rules[3].serializer.assemble)
        XCTAssertNil(config.rules[3].serializer.maxEvents)

        XCTAssertEqual(errors(#"""
        {"rules": [{"name": "a", "serializer": {"type": "msgpack", "maxDepth": 0}},
                   {"name": "b", "serializer": {"type": "msgpack", "maxDepth": 1025}},
                   {"name": "c", "serializer": {"type": "eventStream", "assemble": "choices/0"}},
                   {"name": "d", "serializer": {"type": "eventStream", "assemble": 3}},
                   {"name": "e", "serializer": {"type": "eventStream", "maxEvents": -1}},
                   {"name": "f", "serializer": {"type": "msgpak"}}]}
        """#).map { String($0.prefix(while: { $0 != ":" })) },
                       ["rules[0].serializer.maxDepth", "rules[1].serializer.maxDepth", "rules[2].serializer.assemble",
                        "rules[3].serializer.assemble", "rules[4].serializer.maxEvents", "rules[5].serializer.type"])
        XCTAssert(errors(#"{"rules": [{"name": "c", "serializer": {"type": "eventStream", "assemble": "a/b"}}]}"#).first?
            .contains("expected a JSON Pointer such as /choices/0/delta/content") == true)
    }

    /// What `run` would refuse at start-up (exit 1) check-config now refuses with a path (exit 2).
    func testConfigsThatCouldNotRunAreRefused() throws {
        XCTAssertEqual(errors(#"{"listen": ["127.0.0.1:8080", "127.0.0.1:8080"]}"#),
                       ["listen[1]: 127.0.0.1:8080 overlaps listen[0] (127.0.0.1:8080): the same port twice"])
        XCTAssertEqual(errors(#"{"listen": ["0.0.0.0:8080", "127.0.0.1:8080"], "access": {"allow": ["10.0.0.0/8"]}}"#).count, 1)
        // Other ports, other families, and ports chosen by the kernel do not overlap.
        XCTAssertEqual(errors(#"{"listen": ["127.0.0.1:8080", "127.0.0.1:8081", "[::1]:8080", "127.0.0.1:0", "127.0.0.1:0"]}"#), [])
        for name in [".", ".."] {
            XCTAssertEqual(errors(#"{"log": {"fileName": "\#(name)"}}"#), [#"log.fileName: expected a plain file name, found "\#(name)""#])
        }
        XCTAssertEqual(errors(#"{"tls": {"intercept": ["*"], "upstreamCAFile": "/nonexistent/ca.pem"}}"#),
                       ["tls.upstreamCAFile: /nonexistent/ca.pem does not exist or cannot be read"])
        XCTAssertEqual(errors(#"{"tls": {"upstreamCAFile": "/nonexistent/ca.pem"}}"#), [], "not read without interception")
    }

    /// validate.contentType follows Alamofire: `*` only as a whole part. A partial wildcard
    /// never matched at run time, so every response failed validation.
    func testValidateContentTypeTakesOnlyWholePartWildcards() throws {
        let rule = { (t: String) in #"{"rules": [{"name": "r", "serializer": {"type": "json"}, "validate": {"contentType": ["\#(t)"]}}]}"# }
        for ok in ["application/json", "application/*", "*/*", "text/plain; charset=utf-8"] {
            XCTAssertEqual(errors(rule(ok)), [], ok)
        }
        let e = errors(rule("application/*+json"))
        XCTAssertEqual(e.count, 1, "\(e)")
        XCTAssertTrue(e.first?.hasPrefix("rules[0].validate.contentType[0]:") ?? false, "\(e)")
    }

    /// A rule with a missing or bad name still has the rest of it checked, each error once.
    func testARuleWithoutANameIsStillCheckedWhole() throws {
        let e = errors(#"{"rules": [{"name": 5, "serializer": {"type": "yaml"}}, {"match": {"status": ["abc"]}, "serializer": {"type": "json"}}, {"name": "default", "serializer": {"type": "json"}}]}"#)
        XCTAssertEqual(e.map { String($0.prefix { $0 != ":" }) }.sorted(),
                       ["rules[0].name", "rules[0].serializer.type", "rules[1].match.status[0]", "rules[1].name", "rules[2].name"], "\(e)")
    }

    /// One error per line, whatever the file quoted: a newline in a value is shown escaped.
    func testAnErrorQuotingANewlineStaysOnOneLine() throws {
        let e = errors(#"{"listen": ["bad\naddress"]}"#)
        XCTAssertEqual(e.count, 1)
        XCTAssertFalse(e[0].contains("\n"), e[0])
        XCTAssertTrue(e[0].contains(#"bad\naddress"#), e[0])
    }

    /// Empty lists that silently refuse every client or make a rule match nothing (or all).
    func testEmptyListsThatWouldSilentlyChangeBehaviourAreRefused() throws {
        XCTAssertEqual(errors(#"{"access": {"allow": []}}"#), ["access.allow: is empty, which refuses every client; list at least one range"])
        let e = errors(#"{"rules": [{"name": "r", "match": {"method": [], "status": [], "contentType": [], "headers": []}, "serializer": {"type": "json"}}]}"#)
        XCTAssertEqual(e.map { String($0.prefix { $0 != ":" }) }.sorted(),
                       ["rules[0].match.contentType", "rules[0].match.headers", "rules[0].match.method", "rules[0].match.status"], "\(e)")
    }

    func testDecodePoolAndBackpressureLimits() throws {
        let defaults = try parse("{}").get()
        XCTAssertEqual(defaults.maxDecodedBytes, 8 << 20)
        XCTAssertEqual(defaults.engine.maxIdlePerOrigin, 64)
        XCTAssertEqual(defaults.engine.highWaterBytes, 256 << 10)
        let c = try parse(#"""
        {"capture": {"maxDecodedBytes": 1048576}, "upstream": {"maxIdlePerOrigin": 0},
         "limits": {"highWaterBytes": 65536}}
        """#).get()
        XCTAssertEqual(c.maxDecodedBytes, 1 << 20)
        XCTAssertEqual(c.engine.maxIdlePerOrigin, 0)
        XCTAssertEqual(c.engine.highWaterBytes, 64 << 10)
        let e = errors(#"{"capture": {"maxDecodedBytes": 10}, "upstream": {"maxIdlePerOrigin": -1}, "limits": {"highWaterBytes": 1}}"#)
        XCTAssertEqual(e.map { String($0.prefix { $0 != ":" }) }.sorted(),
                       ["capture.maxDecodedBytes", "limits.highWaterBytes", "upstream.maxIdlePerOrigin"], "\(e)")
    }

    func testUpstreamMaxConcurrentStreams() throws {
        XCTAssertEqual(try parse("{}").get().engine.upstreamMaxConcurrentStreams, 100)
        XCTAssertEqual(try parse(#"{"upstream": {"maxConcurrentStreams": 8}}"#).get().engine.upstreamMaxConcurrentStreams, 8)
        for bad in ["0", "10001", "\"8\""] {
            let e = errors(#"{"upstream": {"maxConcurrentStreams": "# + bad + "}}")
            XCTAssertEqual(e.map { String($0.prefix { $0 != ":" }) }, ["upstream.maxConcurrentStreams"], "\(bad): \(e)")
        }
    }

    func testHTTP2KeysAndTheirBounds() throws {
        let defaults = try parse("{}").get()
        XCTAssertTrue(defaults.tls.http2)
        XCTAssertEqual(defaults.engine.http2MaxConcurrentStreams, 100)
        XCTAssertEqual(defaults.engine.http2ResetBurst, 1000)
        XCTAssertEqual(defaults.engine.http2ResetsPerSecond, 33)
        XCTAssertEqual(defaults.engine.http2SettingsPerSecond, 100)
        XCTAssertEqual(defaults.engine.http2MaxContinuations, 8)
        let c = try parse(#"""
        {"tls": {"http2": false}, "limits": {"http2MaxConcurrentStreams": 10, "http2ResetBurst": 50,
         "http2ResetsPerSecond": 0, "http2SettingsPerSecond": 5, "http2MaxContinuations": 2}}
        """#).get()
        XCTAssertFalse(c.tls.http2)
        XCTAssertEqual([c.engine.http2MaxConcurrentStreams, c.engine.http2ResetBurst, c.engine.http2ResetsPerSecond,
                        c.engine.http2SettingsPerSecond, c.engine.http2MaxContinuations], [10, 50, 0, 5, 2])
        let e = errors(#"""
        {"tls": {"http2": "yes"}, "limits": {"http2MaxConcurrentStreams": 0, "http2ResetBurst": 0,
         "http2ResetsPerSecond": -1, "http2SettingsPerSecond": 0, "http2MaxContinuations": 0}}
        """#)
        XCTAssertEqual(e.map { String($0.prefix { $0 != ":" }) }.sorted(),
                       ["limits.http2MaxConcurrentStreams", "limits.http2MaxContinuations", "limits.http2ResetBurst",
                        "limits.http2ResetsPerSecond", "limits.http2SettingsPerSecond", "tls.http2"], "\(e)")
    }

    func testTheLeafCacheSizeHasADefaultAndBounds() throws {
        XCTAssertEqual(try parse("{}").get().tls.leafCacheSize, 1000)
        XCTAssertEqual(try parse(#"{"tls": {"leafCacheSize": 3}}"#).get().tls.leafCacheSize, 3)
        for bad in ["0", "1000001", "\"big\""] {
            XCTAssertEqual(errors(#"{"tls": {"leafCacheSize": \#(bad)}}"#).map { String($0.prefix { $0 != ":" }) }, ["tls.leafCacheSize"], bad)
        }
    }

    func testDescriptorSetsAreReadAtLoadAndCheckedWithTheirPaths() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-cfg-pb-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // package p; message M {}
        let set: [UInt8] = [0x0A, 0x11, 0x0A, 0x07] + Array("a.proto".utf8) + [0x12, 0x01, 0x70, 0x22, 0x03, 0x0A, 0x01, 0x4D]
        let good = dir.appendingPathComponent("set.pb").path, bad = dir.appendingPathComponent("bad.pb").path
        try Data(set).write(to: URL(fileURLWithPath: good))
        try Data([0x0A, 0x05, 0x01]).write(to: URL(fileURLWithPath: bad))
        func rule(_ serializer: String) -> String { #"{"rules": [{"name": "r", "serializer": \#(serializer)}]}"# }
        let c = try parse(rule(#"{"type": "protobuf", "descriptorSet": "\#(good)", "message": "p.M"}"#)).get()
        XCTAssertEqual(c.rules.first?.serializer.message, "p.M")
        XCTAssertNotNil(c.rules.first?.serializer.schema)
        XCTAssertNotNil(try parse(rule(#"{"type": "grpc", "descriptorSet": "\#(good)"}"#)).get().rules.first?.serializer.schema)
        for (serializer, path) in [(#"{"type": "protobuf", "descriptorSet": "\#(dir.path)/none.pb", "message": "p.M"}"#, "descriptorSet"),
                                   (#"{"type": "protobuf", "descriptorSet": "\#(bad)", "message": "p.M"}"#, "descriptorSet"),
                                   (#"{"type": "protobuf", "descriptorSet": "\#(good)", "message": "M"}"#, "message"),
                                   (#"{"type": "protobuf", "descriptorSet": "\#(good)"}"#, "message"),
                                   (#"{"type": "json", "descriptorSet": "\#(good)"}"#, "descriptorSet"),
                                   (#"{"type": "grpc", "descriptorSet": "\#(good)", "message": "p.M"}"#, "message")] {
            let e = errors(rule(serializer))
            XCTAssertEqual(e.map { String($0.prefix { $0 != ":" }) }, ["rules[0].serializer.\(path)"], "\(serializer): \(e)")
        }
    }

    func testLogQueueBoundsAndWhenBehind() throws {
        let c = try parse(#"""
        {"log": {"queueCapacity": 100, "queueBytes": 1048576, "decodeQueueCapacity": 200,
                 "decodeQueueBytes": 8388608, "whenBehind": "wait"}}
        """#).get()
        XCTAssertEqual(c.log.queueCapacity, 100)
        XCTAssertEqual(c.log.queueByteCapacity, 1_048_576)
        XCTAssertEqual(c.log.decodeQueueCapacity, 200)
        XCTAssertEqual(c.log.decodeQueueBytes, 8_388_608)
        XCTAssertEqual(c.log.whenBehind, .wait)
        XCTAssertTrue(c.summary.contains("log.whenBehind: wait"), c.summary)
        let d = try parse("{}").get()
        XCTAssertEqual(d.log.whenBehind, .drop)
        XCTAssertEqual(d.log.decodeQueueCapacity, 65_536)
        XCTAssertEqual(d.log.decodeQueueBytes, 256 << 20)
        XCTAssertEqual(d.log.queueByteCapacity, 256 << 20)
        XCTAssertEqual(errors(#"{"log": {"whenBehind": "block"}}"#), [#"log.whenBehind: expected "drop" or "wait", found "block""#])
        XCTAssertEqual(errors(#"{"log": {"decodeQueueBytes": 10}}"#).first?.hasPrefix("log.decodeQueueBytes:"), true)
        XCTAssertEqual(errors(#"{"log": {"decodeQueueCapacity": 0}}"#).first?.hasPrefix("log.decodeQueueCapacity:"), true)
        XCTAssertEqual(errors(#"{"log": {"queueBytes": "big"}}"#).first?.hasPrefix("log.queueBytes:"), true)
    }

    func testLoopNice() throws {
        XCTAssertEqual(try parse("{}").get().engine.loopNice, 5)
        XCTAssertEqual(try parse(#"{"log": {"loopNice": 0}}"#).get().engine.loopNice, 0)
        XCTAssertEqual(try parse(#"{"log": {"loopNice": 19}}"#).get().engine.loopNice, 19)
        XCTAssertEqual(errors(#"{"log": {"loopNice": 20}}"#), ["log.loopNice: must be between 0 and 19, found 20"])
        XCTAssertEqual(errors(#"{"log": {"loopNice": -1}}"#), ["log.loopNice: must be between 0 and 19, found -1"])
        XCTAssertEqual(errors(#"{"log": {"loopNice": 2.5}}"#).first?.hasPrefix("log.loopNice: expected an integer"), true)
    }

    func testSyncInterval() throws {
        XCTAssertEqual(try parse("{}").get().log.syncInterval, 0)
        XCTAssertEqual(try parse(#"{"log": {"syncInterval": 1.5}}"#).get().log.syncInterval, 1.5)
        XCTAssertEqual(errors(#"{"log": {"syncInterval": -1}}"#).first?.hasPrefix("log.syncInterval: must be between 0"), true)
        XCTAssertEqual(errors(#"{"log": {"syncInterval": "1s"}}"#).first?.hasPrefix("log.syncInterval: expected a number of seconds"), true)
    }

    func testWebSocketMessagesAndBlindTunnels() throws {
        let defaults = try parse("{}").get()
        XCTAssertTrue(defaults.engine.captureWebSocketMessages)
        XCTAssertEqual(defaults.blindTunnels, [])
        let set = try parse(#"{"capture": {"websocketMessages": false, "blindTunnels": ["*.corp.test", "10.0.0.1"]}}"#).get()
        XCTAssertFalse(set.engine.captureWebSocketMessages)
        XCTAssertEqual(set.blindTunnels, ["*.corp.test", "10.0.0.1"])
        XCTAssertEqual(errors(#"{"capture": {"websocketMessages": 1}}"#),
                       ["capture.websocketMessages: expected true or false, found the number 1"])
        XCTAssertEqual(errors(#"{"capture": {"blindTunnels": "*"}}"#).first?.hasPrefix("capture.blindTunnels: expected"), true)
    }

    func testWrongTypesNameWhatWasFound() {
        XCTAssertEqual(errors(#"{"capture": {"requestBodies": "yes"}}"#),
                       [#"capture.requestBodies: expected true or false, found the string "yes""#])
        XCTAssertEqual(errors(#"{"listen": 8080}"#), ["listen: expected an array, found the number 8080"])
    }

    func testSecondsBoundsPrintAsWrittenNumbers() {
        XCTAssertEqual(errors(#"{"limits": {"clientIdleTimeout": 40000000}}"#),
                       ["limits.clientIdleTimeout: must be between 0.001 and 31536000 seconds, found 40000000"])
    }

    /// Where an editor shows it: line and column (it was a byte offset, after the file's
    /// name repeated).
    func testInvalidJSONNamesTheLineAndColumn() {
        let e = errors(#"{"listen": [}"#)
        XCTAssertEqual(e.count, 1)
        XCTAssertTrue(e[0].hasPrefix("not valid JSON: "), e[0])
        XCTAssertTrue(e[0].hasSuffix("at line 1, column 13"), e[0])
        let multi = errors("{\n  \"listen\": [\"127.0.0.1:8080\"],\n  \"log\": {\"directory\": \"x\",}\n}\n")
        XCTAssertTrue(multi.first?.hasSuffix("at line 3, column 28") ?? false, "\(multi)")
    }

    func testNonLoopbackListenerNeedsAnExplicitAllowList() {
        XCTAssertEqual(errors(#"{"listen": ["0.0.0.0:8080"]}"#),
                       ["access.allow: required when listening on the non-loopback address 0.0.0.0:8080 (listen[0])"])
        XCTAssertEqual(errors(#"{"listen": ["0.0.0.0:8080"], "access": {"allow": ["10.0.0.0/8"]}}"#), [])
        XCTAssertEqual(errors(#"{"access": {"allow": ["10.0.0.0/33"]}}"#).first?.hasPrefix("access.allow[0]"), true)
    }

    func testFlagsOverrideTheFile() throws {
        var c = try parse(#"{"listen": ["127.0.0.1:9000"], "log": {"directory": "a"}}"#).get()
        XCTAssertEqual(c.override(listen: "[::1]:9001", logDirectory: "/tmp/x"), [])
        XCTAssertEqual(c.engine.listen, ["[::1]:9001"])
        XCTAssertEqual(c.log.directory, "/tmp/x")
        XCTAssertEqual(c.override(listen: "nonsense", logDirectory: nil).map(\.path), ["--listen"])
        XCTAssertEqual(c.override(listen: "0.0.0.0:9000", logDirectory: nil).map(\.path), ["--listen"])
    }

    func testRuleFieldsAreParsed() throws {
        let c = try parse(#"""
        {"rules": [{"name": "x", "match": {"host": "*.Example.com", "path": "/v1/*", "method": "get",
                     "status": ["200-299", "404"], "contentType": ["application/*+json"], "headers": ["X-Debug"]},
                    "serializer": {"type": "json", "allowFragments": false, "emptyResponseCodes": [204], "emptyRequestMethods": ["head", "OPTIONS"]},
                    "validate": {"statusCode": ["2xx"], "contentType": ["application/json"]},
                    "select": ["/a/b", "/c~1d"], "redact": ["/e"]}]}
        """#).get()
        let r = try XCTUnwrap(c.rules.first)
        XCTAssertTrue(r.match.host?.matches("api.example.COM") ?? false)
        XCTAssertFalse(r.match.host?.matches("example.org") ?? true)
        XCTAssertTrue(r.match.path?.matches("/v1/items") ?? false)
        XCTAssertEqual(r.match.methods, ["GET"])
        XCTAssertEqual(r.match.status?.map(\.range), [200...299, 404...404])
        XCTAssertTrue(r.match.contentType?.first?.matches("application/problem+json; charset=utf-8") ?? false)
        XCTAssertEqual(r.match.headers, ["X-Debug"])
        XCTAssertEqual(r.serializer.kind, .json)
        XCTAssertFalse(r.serializer.allowFragments)
        XCTAssertEqual(r.serializer.emptyResponseCodes, [204])
        XCTAssertEqual(r.serializer.emptyRequestMethods, ["HEAD", "OPTIONS"])
        XCTAssertEqual(r.validate?.statusCodes?.map(\.range), [200...299])
        XCTAssertEqual(r.select.map(\.tokens), [["a", "b"], ["c/d"]])
        XCTAssertEqual(r.redact.count, 1)
    }

    func testDuplicateRuleNamesAreRefused() {
        XCTAssertEqual(errors(#"{"rules": [{"name": "a", "serializer": {"type": "json"}}, {"name": "a", "serializer": {"type": "data"}}]}"#),
                       [#"rules[1].name: duplicate rule name "a""#])
    }

    func testEnvExportsPointAtTheListener() {
        XCTAssertTrue(ProxyEnvironment.exports(listen: ["127.0.0.1:8080"]).hasPrefix(
            "export HTTP_PROXY=http://127.0.0.1:8080 HTTPS_PROXY=http://127.0.0.1:8080 NO_PROXY=localhost,127.0.0.1,::1"))
        XCTAssertTrue(ProxyEnvironment.exports(listen: ["0.0.0.0:3128"]).contains("HTTP_PROXY=http://127.0.0.1:3128"))
        XCTAssertTrue(ProxyEnvironment.exports(listen: ["[::1]:8080"]).contains("HTTP_PROXY=http://[::1]:8080"))
    }
}

final class AddressTests: XCTestCase {
    func testSocketAddressParsing() throws {
        XCTAssertEqual(SocketAddress(parsing: "127.0.0.1:0")?.port, 0)
        XCTAssertEqual(SocketAddress(parsing: "[::1]:8080")?.description, "[::1]:8080")
        XCTAssertNil(SocketAddress(parsing: "127.0.0.1"))
        XCTAssertNil(SocketAddress(parsing: "127.0.0.1:65536"))
        XCTAssertNil(SocketAddress(parsing: "localhost:80"))
        XCTAssertNil(SocketAddress(parsing: "::1:80"))
        XCTAssertTrue(try XCTUnwrap(SocketAddress(parsing: "127.9.9.9:1")).isLoopback)
        XCTAssertTrue(try XCTUnwrap(SocketAddress(parsing: "0.0.0.0:1")).isUnspecified)
    }

    func testAddressRanges() throws {
        let r = try XCTUnwrap(AddressRange("10.1.0.0/16"))
        XCTAssertTrue(r.contains(try XCTUnwrap(SocketAddress(parsing: "10.1.200.3:5"))))
        XCTAssertFalse(r.contains(try XCTUnwrap(SocketAddress(parsing: "10.2.0.1:5"))))
        XCTAssertFalse(r.contains(try XCTUnwrap(SocketAddress(parsing: "[::1]:5"))))
        let v6 = try XCTUnwrap(AddressRange("::1/128"))
        XCTAssertTrue(v6.contains(try XCTUnwrap(SocketAddress(parsing: "[::1]:5"))))
        XCTAssertTrue(try XCTUnwrap(AddressRange("0.0.0.0/0")).contains(try XCTUnwrap(SocketAddress(parsing: "8.8.8.8:53"))))
        XCTAssertTrue(try XCTUnwrap(AddressRange("10.0.0.1/31")).contains(try XCTUnwrap(SocketAddress(parsing: "10.0.0.0:1"))))
        XCTAssertNil(AddressRange("10.0.0.0/33"))
        XCTAssertNil(AddressRange("nope/8"))
    }
}
