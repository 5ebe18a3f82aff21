import ExchangeLog
import Foundation
import ProxyEngine
import ResponseSerialization
import Viewer

/// The whole config file (docs/configuration.md), validated. Built-in
/// defaults apply to every key that is absent; unknown keys are errors.
public struct TapwireConfiguration: Sendable {
    public var engine = TapwireConfiguration.defaultEngine
    /// Whether `access.allow` was given explicitly (a non-loopback listener requires it).
    public var accessGiven = false
    public var log = LogSettings()
    /// `log.enabled`: false turns decoding and record writing off (the proxy only forwards);
    /// there for benchmarks that measure what logging costs.
    public var logEnabled = true
    /// `capture.maxDecodedBytes`: at most this much of a body is produced when undoing its
    /// Content-Encoding (a gzip bomb stops there); applies at reload.
    public var maxDecodedBytes = ProcessorSettings.defaultDecodeLimit
    public var tls = TLSConfig()
    /// `upstream.proxy`, `upstream.proxyCredentialsFile`, `upstream.noProxy`: applies at reload
    /// to new upstream connections.
    public var parentProxy = ParentProxySettings()
    /// `capture.blindTunnels`: host globs whose CONNECT is relayed unread whatever it carries
    /// (as `tls.ignore` hosts are).
    public var blindTunnels: [String] = []
    public var redactHeaders: [String] = ["authorization", "proxy-authorization", "cookie", "set-cookie"]
    public var redactJSONKeys: [String] = ["password", "token", "access_token", "refresh_token"]
    public var rules: [Rule] = []
    /// The top-level `replay`: every listener without one of its own answers from it.
    public var replay: ReplaySettings?
    /// `listen[i].replay`, by index (nil: the top-level one, if any).
    public var listenerReplays: [ReplaySettings?] = []
    /// `viewer.*`: the web viewer `tapwire run` serves on its listen address (and `tapwire view`
    /// on its own); a restart applies them.
    public var viewer = ViewerSettings()

    public init() {}

    /// The replay source of `listen[index]`: its own, else the top-level one.
    public func replay(ofListener index: Int) -> ReplaySettings? {
        (index < listenerReplays.count ? listenerReplays[index] : nil) ?? replay
    }

    /// The engine's defaults, except that the loops yield the CPU to logging once it falls
    /// behind (`log.loopNice`): at equal priority, large bodies at full speed can outrun the
    /// single writer and fill the decode queue, so records are dropped; a few nice steps
    /// below, the CPU goes to finishing accepted exchanges first. Not from the start: where
    /// logging keeps up (small bodies), lower loops only lose throughput to every other
    /// thread's wake-ups.
    public static let defaultLoopNice = 5
    static var defaultEngine: EngineConfiguration {
        var e = EngineConfiguration()
        e.loopNice = defaultLoopNice
        return e
    }

    public struct TLSConfig: Sendable, Equatable {
        public var intercept: [String] = []
        public var ignore: [String] = []
        public var caDirectory = "ca"
        public var upstreamCAFile: String?
        public var insecureUpstream = false
        /// `tls.http2`: intercepted clients may pick HTTP/2 by ALPN.
        public var http2 = true
        /// `tls.leafCacheSize`: per-host leaf certificates kept (least recently used go first).
        public var leafCacheSize = 1000
        public init() {}
    }

    /// Reads and validates `path`. Every problem is reported, each with its JSON path.
    public static func load(path: String) -> Result<TapwireConfiguration, ConfigErrorList> {
        guard let data = FileManager.default.contents(atPath: path) else {
            // Every caller prints the file's path before each error.
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            return .failure(ConfigErrorList([ConfigError(path: "", message: why)]))
        }
        return parse(Array(data), name: path)
    }

    public static func parse(_ bytes: [UInt8], name: String = "config") -> Result<TapwireConfiguration, ConfigErrorList> {
        let document: JSON
        do {
            document = try bytes.withUnsafeBytes { raw throws(JSONParseError) in
                try JSONParser.parse(raw, allowFragments: false)
            }
        } catch let error as JSONParseError {
            // Line and column, as an editor shows them (callers print the file's name first).
            let before = bytes.prefix(min(error.offset, bytes.count))
            let line = before.reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
            let column = before.count - (before.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0) + 1
            return .failure(ConfigErrorList([ConfigError(path: "", message: "not valid JSON: \(error.message) at line \(line), column \(column)")]))
        } catch {
            return .failure(ConfigErrorList([ConfigError(path: "", message: "not valid JSON: \(error)")]))
        }
        let r = ConfigReader()
        let config = read(document, r)
        return r.errors.isEmpty ? .success(config) : .failure(ConfigErrorList(r.errors))
    }

    private static func read(_ doc: JSON, _ r: ConfigReader) -> TapwireConfiguration {
        var c = TapwireConfiguration()
        guard let top = r.object(doc, "", allowed: ["listen", "access", "upstream", "limits", "capture", "log", "tls", "redact", "rules", "viewer", "replay"]) else {
            return c
        }
        if let items = r.listEntries(top["listen"], "listen") {
            if items.isEmpty { r.fail("listen", "needs at least one address") }
            var seen: [SocketAddress] = []
            var listen: [String] = [], modes: [ListenerMode] = [], replays: [ReplaySettings?] = []
            for (path, item) in items {
                guard let entry = ListenEntry.read(item, path, r) else { continue }
                let a = entry.address
                listen.append(a)
                modes.append(entry.mode)
                replays.append(entry.replay)
                let i = listen.count - 1
                guard let address = SocketAddress(parsing: a) else {
                    r.fail(item.isString ? path : "\(path).address",
                           "expected a numeric HOST:PORT such as 127.0.0.1:8080 or [::1]:8080, found \"\(a)\"")
                    continue
                }
                // Caught here so check-config says so (exit 2), not `run` with "Address already in
                // use" from its own first listener (exit 1). A wildcard covers its family's port.
                let wildcard: (SocketAddress) -> Bool = { $0.host == "0.0.0.0" || $0.host == "::" }
                if address.port != 0, let j = seen.firstIndex(where: {
                    $0.port == address.port && $0.family == address.family
                        && ($0.host == address.host || wildcard($0) || wildcard(address))
                }) {
                    r.fail("listen[\(i)]", "\(a) overlaps listen[\(j)] (\(listen[j])): the same port twice")
                }
                seen.append(address)
            }
            c.engine.listen = listen
            c.engine.listenerModes = modes
            c.listenerReplays = replays
        }
        if let v = top["replay"] { c.replay = ReplaySettings.read(v, "replay", r) }
        // A listener's own replay block is checked where it is read; here, the top-level one.
        for i in c.h2cListenersReplaying where i >= c.listenerReplays.count || c.listenerReplays[i] == nil {
            r.fail("listen[\(i)].protocols", "\(Self.h2cWithReplay): the top-level replay applies to it")
        }
        if let access = r.object(top["access"], "access", allowed: ["allow"]) {
            if let allow = r.parsed(access["allow"], "access.allow", expected: "an address range such as 127.0.0.1/32", AddressRange.init) {
                // An empty list refuses every client, loopback included: surely not meant.
                if allow.isEmpty { r.fail("access.allow", "is empty, which refuses every client; list at least one range") }
                c.engine.allow = allow
                c.accessGiven = true
            }
        }
        if let up = r.object(top["upstream"], "upstream", allowed: ["connectTimeout", "idleTimeout", "readTimeout", "maxIdlePerOrigin",
                                                                    "maxConcurrentStreams", "proxy", "proxyCredentialsFile", "noProxy"]) {
            if let v = r.int(up["maxIdlePerOrigin"], "upstream.maxIdlePerOrigin", min: 0, max: 100_000) { c.engine.maxIdlePerOrigin = v }
            if let v = r.int(up["maxConcurrentStreams"], "upstream.maxConcurrentStreams", min: 1, max: 10_000) {
                c.engine.upstreamMaxConcurrentStreams = v
            }
            if let v = r.seconds(up["connectTimeout"], "upstream.connectTimeout") { c.engine.connectTimeout = v }
            if let v = r.seconds(up["idleTimeout"], "upstream.idleTimeout") { c.engine.upstreamIdleTimeout = v }
            if let v = r.seconds(up["readTimeout"], "upstream.readTimeout") { c.engine.upstreamReadTimeout = v }
            readParentProxy(up, r, into: &c.parentProxy)
        }
        if let lim = r.object(top["limits"], "limits", allowed: ["maxHeaderBytes", "maxConnections", "clientIdleTimeout", "drainTimeout",
                                                              "tunnelIdleTimeout", "highWaterBytes", "http2MaxConcurrentStreams",
                                                              "http2ResetBurst", "http2ResetsPerSecond", "http2SettingsPerSecond",
                                                              "http2MaxContinuations"]) {
            if let v = r.int(lim["http2MaxConcurrentStreams"], "limits.http2MaxConcurrentStreams", min: 1, max: 10_000) {
                c.engine.http2MaxConcurrentStreams = v
            }
            if let v = r.int(lim["http2ResetBurst"], "limits.http2ResetBurst", min: 1, max: 1_000_000) { c.engine.http2ResetBurst = v }
            if let v = r.int(lim["http2ResetsPerSecond"], "limits.http2ResetsPerSecond", min: 0, max: 1_000_000) {
                c.engine.http2ResetsPerSecond = v
            }
            if let v = r.int(lim["http2SettingsPerSecond"], "limits.http2SettingsPerSecond", min: 1, max: 1_000_000) {
                c.engine.http2SettingsPerSecond = v
            }
            if let v = r.int(lim["http2MaxContinuations"], "limits.http2MaxContinuations", min: 1, max: 10_000) {
                c.engine.http2MaxContinuations = v
            }
            if let v = r.int(lim["highWaterBytes"], "limits.highWaterBytes", min: 16 << 10, max: 64 << 20) { c.engine.highWaterBytes = v }
            if let v = r.int(lim["maxHeaderBytes"], "limits.maxHeaderBytes", min: 1024, max: 16 << 20) { c.engine.maxHeaderBytes = v }
            if let v = r.int(lim["maxConnections"], "limits.maxConnections", min: 1, max: 1 << 20) { c.engine.maxConnections = v }
            if let v = r.seconds(lim["clientIdleTimeout"], "limits.clientIdleTimeout") { c.engine.clientIdleTimeout = v }
            if let v = r.seconds(lim["drainTimeout"], "limits.drainTimeout", min: 0) { c.engine.drainTimeout = v }
            if let v = r.seconds(lim["tunnelIdleTimeout"], "limits.tunnelIdleTimeout") { c.engine.tunnelIdleTimeout = v }
        }
        if let viewer = r.object(top["viewer"], "viewer", allowed: ["enabled", "maxConnections", "idleTimeout", "maxRequestBytes",
                                                                  "pollInterval", "maxRowsPerLook", "maxQueuedRows",
                                                                  "maxBytesPerLook", "heartbeatInterval"]) {
            if let v = r.bool(viewer["enabled"], "viewer.enabled") { c.viewer.enabled = v }
            if let v = r.int(viewer["maxConnections"], "viewer.maxConnections", min: 1, max: 4096) { c.viewer.maxConnections = v }
            if let v = r.seconds(viewer["idleTimeout"], "viewer.idleTimeout") { c.viewer.idleTimeout = v }
            if let v = r.int(viewer["maxRequestBytes"], "viewer.maxRequestBytes", min: 1024, max: 16 << 20) { c.viewer.maxRequestBytes = v }
            if let v = r.seconds(viewer["pollInterval"], "viewer.pollInterval", min: 0.01, max: 10) { c.viewer.pollInterval = v }
            if let v = r.int(viewer["maxRowsPerLook"], "viewer.maxRowsPerLook", min: 1, max: 1_000_000) { c.viewer.maxRowsPerLook = v }
            if let v = r.int(viewer["maxQueuedRows"], "viewer.maxQueuedRows", min: 1, max: 10_000_000) { c.viewer.maxQueuedRows = v }
            if let v = r.int(viewer["maxBytesPerLook"], "viewer.maxBytesPerLook", min: 64 << 10, max: 1 << 30) { c.viewer.maxBytesPerLook = v }
            if let v = r.seconds(viewer["heartbeatInterval"], "viewer.heartbeatInterval", min: 0.1, max: 3600) { c.viewer.heartbeatInterval = v }
            // A queue shorter than one look would cut every full look short (a gap each time).
            if c.viewer.maxQueuedRows < c.viewer.maxRowsPerLook {
                r.fail("viewer.maxQueuedRows", "must be at least viewer.maxRowsPerLook (\(c.viewer.maxRowsPerLook)), found \(c.viewer.maxQueuedRows)")
            }
        }
        if let cap = r.object(top["capture"], "capture", allowed: ["maxBodyBytes", "requestBodies", "maxDecodedBytes",
                                                                    "websocketMessages", "blindTunnels"]) {
            if let v = r.bool(cap["websocketMessages"], "capture.websocketMessages") { c.engine.captureWebSocketMessages = v }
            if let v = r.strings(cap["blindTunnels"], "capture.blindTunnels") { c.blindTunnels = v }
            if let v = r.int(cap["maxDecodedBytes"], "capture.maxDecodedBytes", min: 1024, max: 1 << 30) { c.maxDecodedBytes = v }
            if let v = r.int(cap["maxBodyBytes"], "capture.maxBodyBytes", min: 0, max: 1 << 30) { c.engine.captureMaxBodyBytes = v }
            if let v = r.bool(cap["requestBodies"], "capture.requestBodies") { c.engine.captureRequestBodies = v }
        }
        if let log = r.object(top["log"], "log", allowed: ["enabled", "directory", "fileName", "maxFileBytes", "maxFiles", "rotateInterval", "compress", "queueCapacity",
                                                        "queueBytes", "decodeQueueCapacity", "decodeQueueBytes", "whenBehind", "loopNice", "syncInterval"]) {
            if let v = r.bool(log["enabled"], "log.enabled") { c.logEnabled = v }
            if let v = r.string(log["directory"], "log.directory") {
                if v.isEmpty { r.fail("log.directory", "must not be empty") } else { c.log.directory = v }
            }
            if let v = r.string(log["fileName"], "log.fileName") {
                if v.isEmpty || v.contains("/") || v == "." || v == ".." {
                    r.fail("log.fileName", "expected a plain file name, found \"\(v)\"")
                } else { c.log.fileName = v }
            }
            if let v = r.int(log["maxFileBytes"], "log.maxFileBytes", min: 4096) { c.log.maxFileBytes = v }
            if let v = r.int(log["maxFiles"], "log.maxFiles", min: 1, max: 100_000) { c.log.maxFiles = v }
            if let v = log["rotateInterval"] {
                let text: String? = switch v {
                case .string(let s) where Int(s) == nil: s
                case .number(let t): t
                default: nil
                }
                if let text, let interval = RotateInterval(configValue: text) {
                    c.log.rotateInterval = interval
                } else {
                    r.fail("log.rotateInterval", "expected \"never\", \"hourly\", \"daily\" or a whole number of seconds, found \(ConfigReader.describe(v))")
                }
            }
            if let v = r.bool(log["compress"], "log.compress") { c.log.compress = v }
            if let v = r.int(log["queueCapacity"], "log.queueCapacity", min: 16, max: 1 << 24) { c.log.queueCapacity = v }
            if let v = r.int(log["queueBytes"], "log.queueBytes", min: 65_536, max: 1 << 40) { c.log.queueByteCapacity = v }
            if let v = r.int(log["decodeQueueCapacity"], "log.decodeQueueCapacity", min: 16, max: 1 << 24) { c.log.decodeQueueCapacity = v }
            if let v = r.int(log["decodeQueueBytes"], "log.decodeQueueBytes", min: 65_536, max: 1 << 40) { c.log.decodeQueueBytes = v }
            if let v = r.string(log["whenBehind"], "log.whenBehind") {
                if let policy = WhenBehind(rawValue: v) { c.log.whenBehind = policy } else {
                    r.fail("log.whenBehind", "expected \"drop\" or \"wait\", found \"\(v)\"")
                }
            }
            if let v = r.int(log["loopNice"], "log.loopNice", min: 0, max: 19) { c.engine.loopNice = v }
            if let v = r.seconds(log["syncInterval"], "log.syncInterval", min: 0) { c.log.syncInterval = v }
        }
        if let tls = r.object(top["tls"], "tls", allowed: ["intercept", "ignore", "caDirectory", "upstreamCAFile", "insecureUpstream", "http2",
                                                            "leafCacheSize"]) {
            if let v = r.bool(tls["http2"], "tls.http2") { c.tls.http2 = v }
            if let v = r.int(tls["leafCacheSize"], "tls.leafCacheSize", min: 1, max: 1_000_000) { c.tls.leafCacheSize = v }
            if let v = r.strings(tls["intercept"], "tls.intercept") { c.tls.intercept = v }
            if let v = r.strings(tls["ignore"], "tls.ignore") { c.tls.ignore = v }
            if let v = r.string(tls["caDirectory"], "tls.caDirectory") { c.tls.caDirectory = v }
            if case .some(let v) = r.optionalString(tls["upstreamCAFile"], "tls.upstreamCAFile") { c.tls.upstreamCAFile = v }
            if let v = r.bool(tls["insecureUpstream"], "tls.insecureUpstream") { c.tls.insecureUpstream = v }
            if c.tls.caDirectory.isEmpty { r.fail("tls.caDirectory", "must not be empty") }
            // Read at start only when something is intercepted; a missing file then stops `run`.
            if !c.tls.intercept.isEmpty, let file = c.tls.upstreamCAFile, !FileManager.default.isReadableFile(atPath: file) {
                r.fail("tls.upstreamCAFile", "\(file) does not exist or cannot be read")
            }
        }
        if let red = r.object(top["redact"], "redact", allowed: ["headers", "jsonKeys"]) {
            if let v = r.strings(red["headers"], "redact.headers") { c.redactHeaders = v.map { $0.lowercased() } }
            if let v = r.strings(red["jsonKeys"], "redact.jsonKeys") { c.redactJSONKeys = v.map { $0.lowercased() } }
        }
        if let rules = r.array(top["rules"], "rules") {
            var names = Set<String>()
            for (path, item) in rules {
                if let rule = readRule(item, path, r) {
                    if !names.insert(rule.name).inserted { r.fail("\(path).name", "duplicate rule name \"\(rule.name)\"") }
                    c.rules.append(rule)
                }
            }
        }
        // An open proxy is never the default: a listener beyond loopback, of any mode (a reverse
        // or SOCKS listener opens as much), needs an explicit allow list.
        if !c.accessGiven {
            for (i, a) in c.engine.listen.enumerated() {
                if let addr = SocketAddress(parsing: a), !addr.isLoopback {
                    let mode = c.engine.mode(ofListener: i)
                    r.fail("access.allow", "required when listening on the non-loopback address \(a) (listen[\(i)]"
                           + (mode == .forward ? ")" : ", mode \(mode.name))"))
                }
            }
        }
        // Verified as any origin: the trust anchors must be there when an https upstream is.
        if c.tls.intercept.isEmpty, c.needsOriginTLS, let file = c.tls.upstreamCAFile, !FileManager.default.isReadableFile(atPath: file) {
            r.fail("tls.upstreamCAFile", "\(file) does not exist or cannot be read")
        }
        return c
    }

    private static func readParentProxy(_ up: [String: JSON], _ r: ConfigReader, into settings: inout ParentProxySettings) {
        if case .some(.some(let text)) = r.optionalString(up["proxy"], "upstream.proxy") {
            switch ParentProxySettings.parse(text) {
            case .success(let parent): settings.parent = parent
            case .failure(let refusal): r.fail("upstream.proxy", "\(refusal.why), found \(ParentProxySettings.quoted(text))")
            }
        }
        if case .some(.some(let path)) = r.optionalString(up["proxyCredentialsFile"], "upstream.proxyCredentialsFile") {
            settings.credentialsFile = path
            if settings.parent == nil {
                if up["proxy"] == nil || up["proxy"] == .null {
                    r.fail("upstream.proxyCredentialsFile", "is set but upstream.proxy is not")
                }
            } else if settings.parent?.credentials != nil {
                r.fail("upstream.proxyCredentialsFile", "upstream.proxy already holds credentials; give them in one place")
            } else {
                switch ParentProxySettings.readCredentials(path) {
                case .success(let credentials): settings.parent?.credentials = credentials
                case .failure(let refusal): r.fail("upstream.proxyCredentialsFile", refusal.why)
                }
            }
        }
        if let parent = settings.parent, parent.kind == .socks5, let credentials = parent.credentials,
           credentials.user.utf8.count > ParentProxySettings.maxSOCKSCredentialBytes
            || credentials.password.utf8.count > ParentProxySettings.maxSOCKSCredentialBytes {
            r.fail(settings.credentialsFile == nil ? "upstream.proxy" : "upstream.proxyCredentialsFile",
                   "a SOCKS5 user name and password are at most 255 bytes each")
        }
        if let entries = r.stringOrStrings(up["noProxy"], "upstream.noProxy") {
            var ok = true
            for (i, entry) in entries.enumerated() where AddressRange(entry) == nil {
                // A host glob: a name, `*.corp.example`; no scheme, port, path or range syntax.
                if entry.isEmpty || entry.contains("/") || entry.contains("[") || entry.contains(":") || entry.contains(" ") {
                    r.fail("upstream.noProxy[\(i)]", "expected a host glob such as *.corp.example or a range such as 10.0.0.0/8, found \"\(entry)\"")
                    ok = false
                }
            }
            if ok { settings.noProxy = entries.map { $0.lowercased() } }
        }
    }

    private static func readRule(_ v: JSON, _ path: String, _ r: ConfigReader) -> Rule? {
        guard let o = r.object(v, path, allowed: ["name", "match", "serializer", "validate", "select", "redact"]) else { return nil }
        let before = r.errors.count
        // A missing or bad name is one error, and the rest of the rule is still checked, so
        // check-config lists everything at once (the rule is dropped by the count below).
        let name: String
        if let given = r.string(o["name"], "\(path).name") {
            name = given
            if given == RuleSet.defaultRuleName {
                r.fail("\(path).name", "\"\(given)\" is the name records give the built-in default; choose another")
            }
        } else {
            if o["name"] == nil { r.fail("\(path).name", "required") }
            name = ""
        }
        var match = RuleMatch()
        if let m = r.object(o["match"], "\(path).match", allowed: ["host", "path", "method", "status", "contentType", "headers",
                                                                   "websocket"]) {
            let mp = "\(path).match"
            if let w = r.bool(m["websocket"], "\(mp).websocket") { match.websocket = w }
            // Patterns that could never match are refused, not kept silently: a host is matched
            // without its port (or IPv6 brackets), a path without its query.
            if let h = r.string(m["host"], "\(mp).host") {
                if h.isEmpty || h.contains("/") || h.contains("[") || h.filter({ $0 == ":" }).count == 1 {
                    r.fail("\(mp).host", "expected a host name glob such as *.example.com (no scheme, port or path), found \"\(h)\"")
                } else {
                    // Request hosts lose a trailing dot (an absolute name); so does the pattern.
                    // Only after a label: `*.` would otherwise become `*`, every host.
                    let absolute = h.count > 1 && h.hasSuffix(".") && !h.hasSuffix("*.")
                    match.host = Glob(absolute ? String(h.dropLast()) : h, caseInsensitive: true)
                }
            }
            if let p = r.string(m["path"], "\(mp).path") {
                if !(p.hasPrefix("/") || p.hasPrefix("*")) || p.contains("?") || p.contains("#") {
                    r.fail("\(mp).path", "expected a path glob starting with / (the query is not matched), found \"\(p)\"")
                } else {
                    match.path = Glob(p)
                }
            }
            if let ms = r.stringOrStrings(m["method"], "\(mp).method") { match.methods = ms.map { $0.uppercased() } }
            match.status = r.parsed(m["status"], "\(mp).status", expected: "a status such as 404, 4xx or 200-299", StatusPattern.init)
            // Parameters are ignored (docs/configuration.md says so): refusing them would stop
            // configs that start today.
            match.contentType = r.parsed(m["contentType"], "\(mp).contentType", expected: "a media type such as application/json or text/*", MediaTypePattern.init)
            if let hs = r.stringOrStrings(m["headers"], "\(mp).headers") {
                for (i, h) in hs.enumerated() where h.isEmpty || h.contains(where: { $0 == ":" || $0 == " " || $0 == "\t" }) {
                    r.fail("\(mp).headers[\(i)]", "expected a header name such as X-Debug (its presence is matched, not a value), found \"\(h)\"")
                }
                match.headers = hs
            }
            // An empty list would make the rule match nothing (or, for headers, everything)
            // without a word; leaving the key out is how to say "any".
            for key in ["method", "status", "contentType", "headers"] {
                if case .array(let items)? = m[key], items.isEmpty {
                    r.fail("\(mp).\(key)", "is empty; leave the key out to match any")
                }
            }
        }
        var spec = SerializerSpec(kind: .json)
        if let s = r.object(o["serializer"], "\(path).serializer",
                            allowed: ["type", "encoding", "allowFragments", "base64Bytes", "maxDepth", "assemble", "maxEvents",
                                      "emptyResponseCodes", "emptyRequestMethods", "descriptorSet", "message"]) {
            let sp = "\(path).serializer"
            if let t = r.string(s["type"], "\(sp).type") {
                if let k = SerializerSpec.Kind(rawValue: t) { spec.kind = k } else {
                    r.fail("\(sp).type", "expected one of \(SerializerSpec.Kind.allCases.map(\.rawValue).joined(separator: ", ")), found \"\(t)\"")
                }
            } else if s["type"] == nil {
                r.fail("\(sp).type", "required")
            }
            if let e = r.string(s["encoding"], "\(sp).encoding") {
                if spec.kind != .string { r.fail("\(sp).encoding", "only applies to the string serializer") }
                else if Charset(ianaName: e) == nil { r.fail("\(sp).encoding", "unknown charset \"\(e)\"") }
                else { spec.encoding = e }
            }
            // An option of another serializer is refused, like `encoding` above: accepted
            // silently it would suggest an effect it never has.
            if let a = r.bool(s["allowFragments"], "\(sp).allowFragments") {
                if spec.kind != .json { r.fail("\(sp).allowFragments", "only applies to the json serializer") } else { spec.allowFragments = a }
            }
            if let b = r.int(s["base64Bytes"], "\(sp).base64Bytes", min: 0, max: 1 << 20) {
                if spec.kind != .data { r.fail("\(sp).base64Bytes", "only applies to the data serializer") } else { spec.base64Bytes = b }
            }
            if let d = r.int(s["maxDepth"], "\(sp).maxDepth", min: 1, max: SerializerSpec.maxDepthLimit) {
                if spec.kind != .msgpack { r.fail("\(sp).maxDepth", "only applies to the msgpack serializer") } else { spec.maxDepth = d }
            }
            if let file = r.string(s["descriptorSet"], "\(sp).descriptorSet") {
                if spec.kind != .protobuf && spec.kind != .grpc {
                    r.fail("\(sp).descriptorSet", "only applies to the protobuf and grpc serializers")
                } else if let bytes = FileManager.default.contents(atPath: file) {
                    do throws(ProtobufError) { spec.schema = try ProtobufSchema(descriptorSet: [UInt8](bytes)) } catch {
                        r.fail("\(sp).descriptorSet", "\(file) is not a FileDescriptorSet (protoc --include_imports --descriptor_set_out): \(error)")
                    }
                } else {
                    r.fail("\(sp).descriptorSet", "\(file) does not exist or cannot be read")
                }
            }
            if let m = r.string(s["message"], "\(sp).message") {
                if spec.kind != .protobuf { r.fail("\(sp).message", "only applies to the protobuf serializer") }
                else if s["descriptorSet"] == nil { r.fail("\(sp).message", "needs a descriptorSet that defines it") }
                else if let schema = spec.schema, !schema.hasMessage(m) {
                    r.fail("\(sp).message", "\(m) is no message type of the descriptor set (write it as package.Type)")
                } else { spec.message = m }
            } else if spec.kind == .protobuf, spec.schema != nil {
                r.fail("\(sp).message", "required with a descriptorSet: the body's message type, as package.Type")
            }
            if let a = r.string(s["assemble"], "\(sp).assemble") {
                if spec.kind != .eventStream { r.fail("\(sp).assemble", "only applies to the eventStream serializer") }
                else if let pointer = try? JSONPointer(a) { spec.assemble = pointer }
                else { r.fail("\(sp).assemble", "expected a JSON Pointer such as /choices/0/delta/content, found \"\(a)\"") }
            }
            if let n = r.int(s["maxEvents"], "\(sp).maxEvents", min: 0, max: Int(Int32.max)) {
                if spec.kind != .eventStream { r.fail("\(sp).maxEvents", "only applies to the eventStream serializer") } else { spec.maxEvents = n }
            }
            if let codes = r.array(s["emptyResponseCodes"], "\(sp).emptyResponseCodes") {
                spec.emptyResponseCodes = Set(codes.compactMap { r.int($0.1, $0.0, min: 100, max: 999) })
            }
            if let ms = r.strings(s["emptyRequestMethods"], "\(sp).emptyRequestMethods") { spec.emptyRequestMethods = Set(ms.map { $0.uppercased() }) }
        } else if o["serializer"] == nil {
            r.fail("\(path).serializer", "required")
        }
        var validation: ValidationSpec?
        if let val = r.object(o["validate"], "\(path).validate", allowed: ["statusCode", "contentType"]) {
            // Empty, it would validate nothing ({}) or refuse every response ([]).
            if val.isEmpty { r.fail("\(path).validate", "is empty; name statusCode and/or contentType") }
            for key in ["statusCode", "contentType"] {
                if case .array(let items)? = val[key], items.isEmpty {
                    r.fail("\(path).validate.\(key)", "is empty: every response would fail; leave the key out to accept any")
                }
            }
            var vs = ValidationSpec()
            vs.statusCodes = r.parsed(val["statusCode"], "\(path).validate.statusCode", expected: "a status such as 200, 2xx or 200-299", StatusPattern.init)
            // Validation is Alamofire's validate(contentType:): a `*` stands only for a whole type
            // or subtype. `application/*+json` (fine in match.contentType) never matched there,
            // so every response failed validation; it is refused here instead.
            vs.contentTypes = r.parsed(val["contentType"], "\(path).validate.contentType",
                                       expected: "a media type such as application/json or application/* (a * only as a whole part)", { t in
                guard MediaTypePattern(t) != nil else { return nil }
                let parts = t.split(separator: ";")[0].split(separator: "/").map { $0.trimmingCharacters(in: .whitespaces) }
                return parts.allSatisfy({ $0 == "*" || !$0.contains("*") }) ? t : nil
            })
            validation = vs
        }
        let select = r.parsed(o["select"], "\(path).select", expected: "a JSON Pointer such as /items/0/id", { try? JSONPointer($0) }) ?? []
        let redact = r.parsed(o["redact"], "\(path).redact", expected: "a JSON Pointer such as /owner/id", { try? JSONPointer($0) }) ?? []
        // Pointers need a JSON value: with data or none there is none, and string's value is
        // text (its redact pointers still reach a JSON request body).
        if !select.isEmpty && !ExchangeProcessor.producesJSON(spec.kind) {
            r.fail("\(path).select", "the \(spec.kind.rawValue) serializer gives no JSON value to select from")
        }
        if !redact.isEmpty && (spec.kind == .data || spec.kind == .none) {
            r.fail("\(path).redact", "the \(spec.kind.rawValue) serializer logs no body to redact")
        }
        guard r.errors.count == before else { return nil }
        return Rule(name: name, match: match, serializer: spec, validate: validation, select: select, redact: redact)
    }

    /// Applies `tapwire run` flags over the file's values.
    public mutating func override(listen: String?, logDirectory: String?) -> [ConfigError] {
        var errors: [ConfigError] = []
        if let l = listen {
            if SocketAddress(parsing: l) == nil {
                errors.append(ConfigError(path: "--listen", message: "expected a numeric HOST:PORT such as 127.0.0.1:8080, found \"\(l)\""))
            } else {
                engine.listen = [l]
                engine.listenerModes = []
                listenerReplays = []
                if let a = SocketAddress(parsing: l), !a.isLoopback, !accessGiven {
                    errors.append(ConfigError(path: "--listen", message: "\(l) is not loopback: set access.allow in the config first (an open proxy is never the default)"))
                }
            }
        }
        if let d = logDirectory {
            if d.isEmpty { errors.append(ConfigError(path: "--log-dir", message: "must not be empty")) } else { log.directory = d }
        }
        return errors
    }

    /// `tapwire run --replay-from DIR`: every listener answers from DIR (as a top-level
    /// `replay` with its defaults, replacing the file's).
    public mutating func override(replayFrom directory: String?) -> [ConfigError] {
        guard let directory else { return [] }
        if let why = ReplaySettings.problem(directory: directory) { return [ConfigError(path: "--replay-from", message: why)] }
        replay = ReplaySettings(directory: directory)
        listenerReplays = []
        return h2cListenersReplaying.map { ConfigError(path: "--replay-from", message: "listen[\($0)]: \(Self.h2cWithReplay)") }
    }

    /// Reverse listeners with `h2c` that a replay applies to: their HTTP/2 streams would go
    /// to the network, which replay promises never happens.
    var h2cListenersReplaying: [Int] {
        engine.listenerModes.indices.filter { i in
            guard case .reverse(let upstream) = engine.listenerModes[i], upstream.h2c else { return false }
            return replay(ofListener: i) != nil
        }
    }

    static let h2cWithReplay = "h2c cannot be combined with replay on the same listener (replay answers HTTP/1.1 only)"

    /// Whether some listener answers from recorded responses (`replay`, `--replay-from`).
    public var replaysAnything: Bool {
        engine.listen.indices.contains { replay(ofListener: $0) != nil }
    }

    /// Whether some origin is reached over TLS without interception: a reverse listener's
    /// https upstream (verified as any origin, so the upstream trust is set up).
    public var needsOriginTLS: Bool {
        engine.listenerModes.contains { mode in
            if case .reverse(let upstream) = mode { return upstream.authority.scheme == "https" }
            return false
        }
    }

    /// One line for `check-config` and the start-up log (names a parent without its credentials).
    public var summary: String {
        "\(engine.listen.count) listener(s) (\(engine.listen.joined(separator: ", "))), \(rules.count) rule(s), "
            + (parentProxy.parent.map { "upstream via \($0.via), " } ?? "")
            + (logEnabled ? "logs in \(log.directory)/\(log.fileName)" + (log.whenBehind == .wait ? " (log.whenBehind: wait)" : "")
                          : "logging off (log.enabled: false)")
    }
}
