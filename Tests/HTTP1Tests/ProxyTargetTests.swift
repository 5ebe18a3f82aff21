import XCTest
@testable import HTTP1

final class ProxyTargetTests: XCTestCase {
    private func form(_ method: String, _ target: String,
                      file: StaticString = #filePath, line: UInt = #line) -> ProxyRequestForm? {
        do { return try HTTPRequestHead(method: method, target: target, headers: [("Host", "h")]).proxyForm() }
        catch { XCTFail("refused: \(error.reason)", file: file, line: line); return nil }
    }

    private func assertFormRefused(_ method: String, _ target: String,
                                   file: StaticString = #filePath, line: UInt = #line) {
        do {
            let result = try HTTPRequestHead(method: method, target: target, headers: [("Host", "h")]).proxyForm()
            XCTFail("accepted as \(result)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, .malformed, file: file, line: line)
            XCTAssertEqual(error.status, 400, file: file, line: line)
        }
    }

    // MARK: - Absolute-form

    func testAbsoluteFormDefaults() {
        XCTAssertEqual(form("GET", "http://example.com/a/b?x=1&y"),
                       .absolute(HTTPAuthority(scheme: "http", host: "example.com", port: 80), originTarget: "/a/b?x=1&y"))
        XCTAssertEqual(form("GET", "https://example.com/"),
                       .absolute(HTTPAuthority(scheme: "https", host: "example.com", port: 443), originTarget: "/"))
    }

    func testSchemeAndHostCaseFolded() {
        XCTAssertEqual(form("GET", "HTTP://Example.COM:8080/Path"),
                       .absolute(HTTPAuthority(scheme: "http", host: "example.com", port: 8080), originTarget: "/Path"))
        XCTAssertEqual(form("GET", "hTTpS://A.b"),
                       .absolute(HTTPAuthority(scheme: "https", host: "a.b", port: 443), originTarget: "/"))
    }

    func testEmptyPathBecomesSlashAndQueryIsKept() {
        XCTAssertEqual(form("GET", "http://example.com"),
                       .absolute(HTTPAuthority(scheme: "http", host: "example.com", port: 80), originTarget: "/"))
        XCTAssertEqual(form("GET", "http://example.com?q=1"),
                       .absolute(HTTPAuthority(scheme: "http", host: "example.com", port: 80), originTarget: "/?q=1"))
    }

    func testFragmentStripped() {
        XCTAssertEqual(form("GET", "http://example.com/p?q#frag"),
                       .absolute(HTTPAuthority(scheme: "http", host: "example.com", port: 80), originTarget: "/p?q"))
        XCTAssertEqual(form("GET", "http://example.com#frag"),
                       .absolute(HTTPAuthority(scheme: "http", host: "example.com", port: 80), originTarget: "/"))
    }

    func testIPLiterals() {
        XCTAssertEqual(form("GET", "http://[::1]:8080/x"),
                       .absolute(HTTPAuthority(scheme: "http", host: "::1", port: 8080), originTarget: "/x"))
        XCTAssertEqual(form("GET", "http://[2001:DB8::1]/"),
                       .absolute(HTTPAuthority(scheme: "http", host: "2001:db8::1", port: 80), originTarget: "/"))
        XCTAssertEqual(form("GET", "http://127.0.0.1:3000/"),
                       .absolute(HTTPAuthority(scheme: "http", host: "127.0.0.1", port: 3000), originTarget: "/"))
    }

    func testEmptyPortMeansDefault() {
        XCTAssertEqual(form("GET", "http://example.com:/"),
                       .absolute(HTTPAuthority(scheme: "http", host: "example.com", port: 80), originTarget: "/"))
    }

    func testAbsoluteFormRefusals() {
        assertFormRefused("GET", "ftp://example.com/")
        assertFormRefused("GET", "ws://example.com/")
        assertFormRefused("GET", "http:example.com/")
        assertFormRefused("GET", "http:/example.com/")
        assertFormRefused("GET", "http:///path")
        assertFormRefused("GET", "http://:80/")
        assertFormRefused("GET", "http://user@example.com/")
        assertFormRefused("GET", "http://user:pass@example.com/")
        assertFormRefused("GET", "http://example.com:0/")
        assertFormRefused("GET", "http://example.com:65536/")
        assertFormRefused("GET", "http://example.com:99999999/")
        assertFormRefused("GET", "http://example.com:8a/")
        assertFormRefused("GET", "http://example.com:-1/")
        assertFormRefused("GET", "http://[::1/")
        assertFormRefused("GET", "http://[zz::1]/")
        assertFormRefused("GET", "http://[::1]x/")
        assertFormRefused("GET", "http://exa\"mple.com/")
        assertFormRefused("GET", "example.com")
        assertFormRefused("GET", "example.com:80")
        assertFormRefused("GET", "")
    }

    // MARK: - Authority-form, origin-form, asterisk

    func testConnectAuthorityForm() {
        XCTAssertEqual(form("CONNECT", "Example.com:443"),
                       .authority(HTTPAuthority(scheme: "", host: "example.com", port: 443)))
        XCTAssertEqual(form("CONNECT", "[::1]:8443"), .authority(HTTPAuthority(scheme: "", host: "::1", port: 8443)))
        XCTAssertEqual(form("CONNECT", "10.0.0.1:22"), .authority(HTTPAuthority(scheme: "", host: "10.0.0.1", port: 22)))
    }

    func testConnectRefusals() {
        assertFormRefused("CONNECT", "example.com")
        assertFormRefused("CONNECT", "example.com:")
        assertFormRefused("CONNECT", "example.com:0")
        assertFormRefused("CONNECT", "example.com:70000")
        assertFormRefused("CONNECT", ":443")
        assertFormRefused("CONNECT", "/path")
        assertFormRefused("CONNECT", "http://example.com:443/")
        assertFormRefused("CONNECT", "user@example.com:443")
        assertFormRefused("CONNECT", "*")
    }

    func testAuthorityFormOnlyForConnect() {
        assertFormRefused("GET", "example.com:443")
    }

    func testOriginForm() {
        XCTAssertEqual(form("GET", "/metrics"), .origin(path: "/metrics"))
        XCTAssertEqual(form("GET", "/healthz?x"), .origin(path: "/healthz?x"))
    }

    func testAsteriskOnlyForOptions() {
        XCTAssertEqual(form("OPTIONS", "*"), .asterisk)
        assertFormRefused("GET", "*")
    }

    // MARK: - HTTPAuthority

    func testAuthorityDescription() {
        XCTAssertEqual(HTTPAuthority(scheme: "http", host: "example.com", port: 80).description, "example.com:80")
        XCTAssertEqual(HTTPAuthority(scheme: "", host: "::1", port: 8080).description, "[::1]:8080")
        XCTAssertEqual(HTTPAuthority(scheme: "https", host: "10.1.2.3", port: 443).description, "10.1.2.3:443")
        // Written into the string's storage: every port width, long hosts, and the fallback.
        for port in [0, 5, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 65_535, 99_999, 100_000, -1, Int.max] {
            for host in ["h", "a-rather-long-host-name.example.internal", "fe80::1:2:3:4", ""] {
                let bracketed = host.contains(":") ? "[\(host)]" : host
                XCTAssertEqual(HTTPAuthority(scheme: "http", host: host, port: port).description, "\(bracketed):\(port)")
            }
        }
    }

    func testHostFieldValueOmitsDefaultPort() {
        XCTAssertEqual(HTTPAuthority(scheme: "http", host: "example.com", port: 80).hostFieldValue, "example.com")
        XCTAssertEqual(HTTPAuthority(scheme: "https", host: "example.com", port: 443).hostFieldValue, "example.com")
        XCTAssertEqual(HTTPAuthority(scheme: "http", host: "example.com", port: 443).hostFieldValue, "example.com:443")
        XCTAssertEqual(HTTPAuthority(scheme: "http", host: "::1", port: 80).hostFieldValue, "[::1]")
        XCTAssertEqual(HTTPAuthority(scheme: "http", host: "::1", port: 8080).hostFieldValue, "[::1]:8080")
    }

    func testURLForLogs() {
        XCTAssertEqual(HTTPAuthority(scheme: "http", host: "api.local", port: 8080).url(originTarget: "/v1/items?x=1"),
                       "http://api.local:8080/v1/items?x=1")
        XCTAssertEqual(HTTPAuthority(scheme: "https", host: "::1", port: 443).url(originTarget: "/"), "https://[::1]/")
    }

    // MARK: - Forwarding

    func testForwardedHeadUsesOriginFormAndTargetAuthority() throws {
        let text = "GET http://Example.com/a?b HTTP/1.1\r\nHost: other.example\r\nAccept: */*\r\n\r\n"
        guard let (head, _) = request(text) else { return }
        guard case .absolute(let authority, let origin) = try head.proxyForm() else { return XCTFail("not absolute") }
        let forwarded = head.forwardedRequestHead(authority: authority, originTarget: origin, keepUpgrade: false)
        XCTAssertEqual(forwarded.method, "GET")
        XCTAssertEqual(forwarded.target, "/a?b")
        XCTAssertEqual(forwarded.version, .http1_1)
        // The target wins over the conflicting Host, in Host's original position.
        XCTAssertEqual(forwarded.headers.fields, [.init(name: "Host", value: "example.com"), .init(name: "Accept", value: "*/*")])
    }

    func testForwardedHeadAddsHostWithPortFirstWhenAbsent() throws {
        guard let (head, _) = request("GET http://example.com:8080/ HTTP/1.0\r\nAccept: */*\r\n\r\n") else { return }
        guard case .absolute(let authority, let origin) = try head.proxyForm() else { return XCTFail("not absolute") }
        let forwarded = head.forwardedRequestHead(authority: authority, originTarget: origin, keepUpgrade: false)
        XCTAssertEqual(forwarded.headers.fields.first, .init(name: "Host", value: "example.com:8080"))
        XCTAssertEqual(forwarded.headers.count, 2)
        XCTAssertEqual(forwarded.version, .http1_1)
    }

    func testForwardedHeadWireBytes() throws {
        let text = "POST http://example.com/submit HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive\r\n"
            + "Content-Length: 3\r\nProxy-Authorization: Basic eA==\r\n\r\n"
        guard let (head, _) = request(text) else { return }
        guard case .absolute(let authority, let origin) = try head.proxyForm() else { return XCTFail("not absolute") }
        let bytes = head.forwardedRequestHead(authority: authority, originTarget: origin, keepUpgrade: false).serialized()
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "POST /submit HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\n")
    }

    // MARK: - Hop-by-hop

    func testHopByHopFieldsRemoved() {
        let headers: HTTPHeaders = [
            ("Host", "h"), ("Connection", "keep-alive"), ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"), ("TE", "trailers"), ("Trailer", "Expires"),
            ("Transfer-Encoding", "chunked"), ("Proxy-Authorization", "Basic x"),
            ("Proxy-Authenticate", "Basic"), ("Upgrade", "websocket"), ("Accept", "*/*"),
        ]
        let kept = headers.removingHopByHop(keepUpgrade: false)
        XCTAssertEqual(kept.fields.map(\.name), ["Host", "Transfer-Encoding", "Accept"])
    }

    func testReplayOfFieldIsForTheProxyOnly() throws {
        let text = "POST http://example.com/submit HTTP/1.1\r\nHost: example.com\r\nx-tapwire-REPLAY-of: 0000018c2b1f4a1e-000001\r\n"
            + "Content-Length: 3\r\nX-Tapwire-Replay: kept\r\n\r\n"
        guard let (head, _) = request(text) else { return }
        guard case .absolute(let authority, let origin) = try head.proxyForm() else { return XCTFail("not absolute") }
        let expected = "POST /submit HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\nX-Tapwire-Replay: kept\r\n\r\n"
        XCTAssertEqual(String(decoding: head.forwardedWireForm(authority: authority, originTarget: origin, keepUpgrade: false), as: UTF8.self), expected)
        XCTAssertEqual(String(decoding: head.forwardedRequestHead(authority: authority, originTarget: origin, keepUpgrade: false).serialized(), as: UTF8.self), expected)
        XCTAssertTrue(Array("X-TAPWIRE-replay-OF".utf8).withUnsafeBufferPointer(ReplayOfField.matches))
        XCTAssertFalse(Array("X-Tapwire-Replay-Ox".utf8).withUnsafeBufferPointer(ReplayOfField.matches))
    }

    func testFieldsNamedByConnectionRemoved() {
        let headers: HTTPHeaders = [
            ("Host", "h"), ("Connection", "X-Secret, close"), ("connection", "x-other"),
            ("x-secret", "1"), ("X-Other", "2"), ("X-Kept", "3"),
        ]
        XCTAssertEqual(headers.removingHopByHop(keepUpgrade: false).fields,
                       [.init(name: "Host", value: "h"), .init(name: "X-Kept", value: "3")])
    }

    func testKeepAliveAloneNamesNoField() {
        // Only `keep-alive` listed: every other field stays (a Close field too).
        let keepAlive: HTTPHeaders = [("Connection", " Keep-Alive ,, "), ("Keep-Alive", "timeout=5"), ("Close", "x"), ("X-Kept", "1")]
        XCTAssertEqual(keepAlive.removingHopByHop(keepUpgrade: false).fields.map(\.name), ["Close", "X-Kept"])
        // A later Connection field with another token still names fields.
        let later: HTTPHeaders = [("Connection", "keep-alive"), ("connection", "close, X-Late"), ("Close", "x"),
                                  ("X-Late", "1"), ("X-Kept", "2")]
        XCTAssertEqual(later.removingHopByHop(keepUpgrade: false).fields.map(\.name), ["X-Kept"])
        let head = HTTPResponseHead(status: 200, reason: "OK", headers: later)
        XCTAssertEqual(String(decoding: head.forwardedWireForm(connection: nil), as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nX-Kept: 2\r\n\r\n")
    }

    func testUpgradeIsForwardedExceptH2COrOnHTTP10() {
        func head(_ headers: HTTPHeaders, _ version: HTTPVersion = .http1_1) -> HTTPRequestHead {
            HTTPRequestHead(method: "GET", target: "/", version: version, headers: headers)
        }
        XCTAssertTrue(head([("Connection", "Upgrade"), ("Upgrade", "websocket")]).forwardsUpgrade)
        XCTAssertTrue(head([("Connection", "keep-alive, upgrade"), ("Upgrade", "h2c, websocket")]).forwardsUpgrade,
                      "another protocol is offered besides h2c")
        XCTAssertFalse(head([("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"), ("HTTP2-Settings", "AAMAAABkAAQCAAAAAAIAAAAA")]).forwardsUpgrade,
                       "Upgrade: h2c is never honoured")
        XCTAssertFalse(head([("Connection", "upgrade"), ("Upgrade", " H2C ")]).forwardsUpgrade, "case-insensitive")
        XCTAssertFalse(head([("Connection", "Upgrade"), ("Upgrade", "websocket")], .http1_0).forwardsUpgrade)
        XCTAssertFalse(head([("Upgrade", "websocket")]).forwardsUpgrade, "Connection must name upgrade")
        XCTAssertFalse(head([("Connection", "upgrade")]).forwardsUpgrade, "and Upgrade must be there")
    }

    func testListContains() {
        let headers: HTTPHeaders = [("Connectionx", "close"), ("CONNECTION", "keep-alive , Upgrade"), ("Upgrade", "h2c"),
                                    ("connection", "\tClose")]
        XCTAssertTrue(headers.listContains(name: "connection", token: "close"), "in the second Connection field")
        XCTAssertTrue(headers.listContains(name: "Connection", token: "upgrade"))
        XCTAssertTrue(headers.listContains(name: "connection", token: "KEEP-ALIVE"))
        XCTAssertFalse(headers.listContains(name: "connection", token: "h2c"), "a value of another field")
        XCTAssertFalse(headers.listContains(name: "connectionx", token: "keep-alive"))
        XCTAssertFalse(headers.listContains(name: "connection", token: "clos"))
        XCTAssertFalse(HTTPHeaders([("Connection", "close")]).listContains(name: "connection", token: ""))
        let http10 = HTTPRequestHead(method: "GET", target: "/", version: .http1_0, headers: [("Connection", "Keep-Alive")])
        XCTAssertFalse(http10.wantsClose)
        XCTAssertTrue(HTTPRequestHead(method: "GET", target: "/", version: .http1_0).wantsClose)
        XCTAssertTrue(HTTPRequestHead(method: "GET", target: "/", headers: [("connection", "x, close")]).wantsClose)
    }

    func testListHoldsOnly() {
        func holds(_ value: String) -> Bool {
            Array(value.utf8).withUnsafeBufferPointer { v in
                Array("keep-alive".utf8).withUnsafeBufferPointer { HTTPHeaders.list(v, holdsOnly: $0) }
            }
        }
        XCTAssertTrue(holds(""))
        XCTAssertTrue(holds(" , "))
        XCTAssertTrue(holds("KEEP-ALIVE"))
        XCTAssertTrue(holds("keep-alive,\tkeep-alive "))
        XCTAssertFalse(holds("keep-alive, close"))
        XCTAssertFalse(holds("keep-alives"))
        XCTAssertFalse(holds("x"))
    }

    func testConnectionCannotStripFramingOrHost() {
        let headers: HTTPHeaders = [
            ("Host", "h"), ("Connection", "Content-Length, Transfer-Encoding, Host"),
            ("Content-Length", "3"), ("Transfer-Encoding", "chunked"),
        ]
        XCTAssertEqual(headers.removingHopByHop(keepUpgrade: false).fields.map(\.name),
                       ["Host", "Content-Length", "Transfer-Encoding"])
    }

    func testUpgradeKeptWhenAsked() {
        let headers: HTTPHeaders = [
            ("Host", "h"), ("Connection", "Upgrade, X-Hop"), ("Upgrade", "websocket"),
            ("X-Hop", "1"), ("Sec-WebSocket-Key", "k"),
        ]
        XCTAssertEqual(headers.removingHopByHop(keepUpgrade: true).fields,
                       [.init(name: "Host", value: "h"), .init(name: "Connection", value: "upgrade"),
                        .init(name: "Upgrade", value: "websocket"), .init(name: "Sec-WebSocket-Key", value: "k")])
        XCTAssertEqual(headers.removingHopByHop(keepUpgrade: false).fields.map(\.name), ["Host", "Sec-WebSocket-Key"])
    }

    func testUpgradeKeptOnTheConnectionFieldItselfWhateverComesBefore() {
        // Built through the API, a field can have an empty name (and so share its place in
        // the bytes with the next field); the upgrade value still lands on Connection.
        let headers: HTTPHeaders = [("", ""), ("Connection", "keep-alive"), ("Connection", "upgrade"),
                                    ("Upgrade", "websocket")]
        XCTAssertEqual(headers.removingHopByHop(keepUpgrade: true).fields,
                       [.init(name: "", value: ""), .init(name: "Connection", value: "upgrade"),
                        .init(name: "Upgrade", value: "websocket")])
    }

    func testKeepUpgradeWithoutUpgradeFieldAddsNothing() {
        let headers: HTTPHeaders = [("Host", "h"), ("Connection", "close")]
        XCTAssertEqual(headers.removingHopByHop(keepUpgrade: true).fields.map(\.name), ["Host"])
    }

    func testForwardedResponseHead() {
        let head = HTTPResponseHead(status: 200, reason: "OK", version: .http1_0,
                                    headers: [("Connection", "keep-alive"), ("Keep-Alive", "timeout=5"), ("Content-Length", "2")])
        let forwarded = head.forwardedResponseHead(keepUpgrade: false, closing: true)
        XCTAssertEqual(forwarded.version, .http1_1)
        XCTAssertEqual(forwarded.headers.fields,
                       [.init(name: "Content-Length", value: "2"), .init(name: "Connection", value: "close")])
        XCTAssertEqual(head.forwardedResponseHead(keepUpgrade: false, closing: false).headers.fields.map(\.name), ["Content-Length"])
    }

    // MARK: - Connection persistence

    func testWantsClose() {
        XCTAssertFalse(request("GET / HTTP/1.1\r\nHost: h\r\n\r\n")?.head.wantsClose ?? true)
        XCTAssertTrue(request("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")?.head.wantsClose ?? false)
        XCTAssertTrue(request("GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, CLOSE\r\n\r\n")?.head.wantsClose ?? false)
        XCTAssertFalse(request("GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n")?.head.wantsClose ?? true)
        XCTAssertTrue(request("GET / HTTP/1.0\r\n\r\n")?.head.wantsClose ?? false)
        XCTAssertFalse(request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")?.head.wantsClose ?? true)
        XCTAssertTrue(request("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n")?.head.wantsClose ?? false)
    }

    func testResponseWantsClose() {
        XCTAssertFalse(response("HTTP/1.1 200 OK\r\n\r\n")?.head.wantsClose ?? true)
        XCTAssertTrue(response("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")?.head.wantsClose ?? false)
        XCTAssertTrue(response("HTTP/1.0 200 OK\r\n\r\n")?.head.wantsClose ?? false)
        XCTAssertFalse(response("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n")?.head.wantsClose ?? true)
    }
}

/// The one-pass forwarded response head must be byte for byte what the two-step path
/// (removingHopByHop, version 1.1, an added Connection field, serialized) writes.
final class ForwardedWireFormTests: XCTestCase {
    func twoStep(_ head: HTTPResponseHead, _ connection: String?) -> [UInt8] {
        var out = head
        out.version = .http1_1
        out.headers = head.headers.removingHopByHop(keepUpgrade: false)
        if let connection { out.headers.add(name: "Connection", value: connection) }
        return out.serialized()
    }

    func testSameBytesAsTheTwoStepPath() {
        let heads: [HTTPResponseHead] = [
            HTTPResponseHead(status: 200, reason: "OK", version: .http1_1, headers: [
                ("Server", "nginx/1.22.1"), ("Date", "Wed, 02 Dec 2026 13:43:43 GMT"), ("Content-Type", "application/json"),
                ("Content-Length", "113"), ("Connection", "keep-alive"), ("ETag", "\"6b10202d-71\""), ("Accept-Ranges", "bytes")]),
            HTTPResponseHead(status: 404, reason: "Not Found", version: .http1_0, headers: [
                ("connection", "X-Secret, close"), ("X-Secret", "s"), ("x-secret", "t"), ("Keep-Alive", "timeout=5"),
                ("Transfer-Encoding", "chunked"), ("TE", "trailers"), ("Trailer", "X-T"), ("Upgrade", "h2c"),
                ("Proxy-Authenticate", "Basic"), ("Proxy-Connection", "keep-alive"), ("X-Kept", "1")]),
            HTTPResponseHead(status: 204, reason: "", headers: []),
            HTTPResponseHead(status: 200, reason: "OK", headers: [("Connection", "keep-alive"), ("X-A", "1"),
                ("connection", "x-a"), ("Close", "c")]),
            HTTPResponseHead(status: 500, reason: "Déjà vu", headers: [("Connection", "Content-Length, Host"),
                ("Content-Length", "0"), ("Host", "h"), ("Connection", " x-a ,, X-B "), ("X-A", "1"), ("x-b", "2"), ("X-C", "3")]),
        ]
        for head in heads {
            for connection in [nil, "close", "keep-alive"] {
                XCTAssertEqual(String(decoding: head.forwardedWireForm(connection: connection), as: UTF8.self),
                               String(decoding: twoStep(head, connection), as: UTF8.self), "\(head.status) \(connection ?? "-")")
            }
        }
    }

    /// The same for requests: `forwardedRequestHead` then `serialized`.
    func testRequestSameBytesAsTheTwoStepPath() {
        let heads: [HTTPRequestHead] = [
            HTTPRequestHead(method: "GET", target: "http://h/p", headers: [("Host", "h"), ("User-Agent", "wrk")]),
            HTTPRequestHead(method: "POST", target: "http://h/p", version: .http1_0, headers: [
                ("Content-Length", "3"), ("connection", "X-Secret, keep-alive"), ("X-Secret", "s"), ("Keep-Alive", "timeout=5"),
                ("Proxy-Authorization", "Basic x"), ("TE", "trailers"), ("Accept", "*/*")]),
            HTTPRequestHead(method: "GET", target: "http://h/ws", headers: [
                ("host", "other"), ("Connection", "keep-alive"), ("Connection", "Upgrade, X-Hop"), ("Upgrade", "websocket"),
                ("X-Hop", "1"), ("HOST", "again"), ("Sec-WebSocket-Key", "k")]),
            HTTPRequestHead(method: "GET", target: "http://h/ws", headers: [("Upgrade", "websocket"), ("X-A", "1")]),
            HTTPRequestHead(method: "GET", target: "http://h/", headers: [("Connection", "keep-alive"), ("X-A", "1"),
                ("connection", "x-a, close"), ("Close", "c")]),
            HTTPRequestHead(method: "OPTIONS", target: "http://h/", headers: []),
            // The tightest fits: no Host (added) and Connection values shorter than `upgrade`.
            HTTPRequestHead(method: "GET", target: "http://h/", headers: [("Connection", "u"), ("Upgrade", "x")]),
            HTTPRequestHead(method: "GET", target: "http://h/", headers: [("Connection", ""), ("Upgrade", "")]),
            HTTPRequestHead(method: "GET", target: "http://h/", headers: [("Upgrade", "")]),
        ]
        let authorities = [HTTPAuthority(scheme: "http", host: "example.com", port: 80),
                           HTTPAuthority(scheme: "http", host: "::1", port: 8080),
                           HTTPAuthority(scheme: "https", host: "a-much-longer-host-name.example.org", port: 443)]
        for head in heads {
            for authority in authorities {
                for keepUpgrade in [false, true] {
                    let twoStep = head.forwardedRequestHead(authority: authority, originTarget: "/p?q=1", keepUpgrade: keepUpgrade)
                        .serialized()
                    XCTAssertEqual(
                        String(decoding: head.forwardedWireForm(authority: authority, originTarget: "/p?q=1", keepUpgrade: keepUpgrade),
                               as: UTF8.self),
                        String(decoding: twoStep, as: UTF8.self), "\(head.headers.fields) \(authority) \(keepUpgrade)")
                }
            }
        }
        // Spelled out once: Host first, hop-by-hop gone, our version.
        let head = HTTPRequestHead(method: "GET", target: "http://h/p", version: .http1_0,
                                   headers: [("Accept", "*/*"), ("Proxy-Connection", "keep-alive")])
        XCTAssertEqual(String(decoding: head.forwardedWireForm(authority: authorities[0], originTarget: "/p", keepUpgrade: false),
                              as: UTF8.self),
                       "GET /p HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
    }
}
