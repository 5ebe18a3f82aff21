import HTTP1
import XCTest
@testable import ProxyEngine

/// The parent proxies' handshakes as playbooks: the bytes the parent sends in, the step out.
final class ParentHandshakeTests: XCTestCase {
    let origin = HTTPAuthority(scheme: "https", host: "api.example", port: 443)
    let squid = ParentProxy(kind: .http, host: "squid.corp", port: 3128)
    let socks = ParentProxy(kind: .socks5, host: "127.0.0.1", port: 1080)
    let credentials = ParentCredentials(user: "alice", password: "s3cret")

    func feed<H>(_ handshake: inout H, _ bytes: [UInt8], _ step: (inout H, UnsafeRawBufferPointer) -> ParentHandshakeStep)
        -> ParentHandshakeStep {
        bytes.withUnsafeBytes { step(&handshake, $0) }
    }

    func http(_ h: inout HTTPConnectHandshake, _ text: String) -> ParentHandshakeStep {
        feed(&h, Array(text.utf8)) { $0.received($1) }
    }

    func socks5(_ h: inout SOCKS5Handshake, _ bytes: [UInt8]) -> ParentHandshakeStep {
        feed(&h, bytes) { $0.received($1) }
    }

    // MARK: HTTP CONNECT

    func testConnectRequestCarriesProxyAuthorizationOnlyWithCredentials() {
        let bare = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 65536)
        XCTAssertEqual(String(decoding: bare.request(), as: UTF8.self),
                       "CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\n")
        var withCredentials = squid
        withCredentials.credentials = credentials
        let authed = HTTPConnectHandshake(target: HTTPAuthority(scheme: "", host: "::1", port: 8443), parent: withCredentials,
                                          maxAnswerBytes: 65536)
        XCTAssertEqual(String(decoding: authed.request(), as: UTF8.self),
                       "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\nProxy-Authorization: Basic YWxpY2U6czNjcmV0\r\n\r\n")
    }

    func testA2xxAnswerOpensTheTunnelAndLeavesWhatFollowsToTheOrigin() {
        var h = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 65536)
        XCTAssertEqual(http(&h, "HTTP/1.1 200 Connection"), .needMore)
        let head = "HTTP/1.1 200 Connection established\r\nVia: squid\r\n\r\n"
        XCTAssertEqual(http(&h, head + "\u{16}\u{03}"), .established(consumed: head.utf8.count))
    }

    func test407IsAnAuthFailureNeverPassedOn() {
        var h = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 65536)
        let answer = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 5\r\n\r\nnope!"
        XCTAssertEqual(http(&h, answer), .failed(TransportError(.upstreamProxyAuthFailed,
            "the parent proxy http://squid.corp:3128 asks for credentials and none are set (407 Proxy Authentication Required)"), answer: nil))
        var withCredentials = squid
        withCredentials.credentials = credentials
        var refused = HTTPConnectHandshake(target: origin, parent: withCredentials, maxAnswerBytes: 65536)
        guard case .failed(let error, nil) = http(&refused, answer) else { return XCTFail() }
        XCTAssertEqual(error.code, .upstreamProxyAuthFailed)
        XCTAssertTrue(error.message.contains("refused the credentials"))
        XCTAssertFalse(error.message.contains("s3cret"))
    }

    func testAnotherRefusalCarriesTheParentsPageWhole() {
        var h = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 65536)
        let head = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/html\r\nContent-Length: 10\r\n\r\n"
        XCTAssertEqual(http(&h, head + "<h1>no"), .needMore, "waits for the body its length announces")
        let whole = head + "<h1>no</h1"
        XCTAssertEqual(http(&h, whole + "extra"), .failed(TransportError(.upstreamProxyFailed,
            "the parent proxy http://squid.corp:3128 refused CONNECT api.example:443: 403 Forbidden"), answer: Array(whole.utf8)))
    }

    func testARefusalWithoutLengthEndsAtTheCloseOrTheLastChunkAndStaysWithinTheBound() {
        var h = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 64)
        let head = "HTTP/1.1 502 Bad Gateway\r\n\r\n"
        XCTAssertEqual(http(&h, head + "down"), .needMore, "no length: the page ends at the close")
        guard case .failed(let error, let answer?) = feed(&h, Array((head + "down").utf8), { $0.closed($1) }) else { return XCTFail() }
        XCTAssertEqual(error.code, .upstreamProxyFailed)
        XCTAssertEqual(answer, Array((head + "down").utf8))
        var chunked = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 128)
        let chunkedHead = "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n"
        XCTAssertEqual(http(&chunked, chunkedHead + "2\r\nno\r\n"), .needMore)
        let page = chunkedHead + "2\r\nno\r\n0\r\n\r\n"
        guard case .failed(_, let whole?) = http(&chunked, page) else { return XCTFail() }
        XCTAssertEqual(whole, Array(page.utf8))
        var empty = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 128)
        let bareHead = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
        guard case .failed(_, let bare?) = http(&empty, bareHead + "x") else { return XCTFail() }
        XCTAssertEqual(bare, Array(bareHead.utf8), "nothing after the page's end")
        var long = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 64)
        let big = "HTTP/1.1 503 Unavailable\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 100)
        guard case .failed(_, let cut?) = http(&long, big) else { return XCTFail() }
        XCTAssertEqual(cut.count, 64, "the page is cut at the bound rather than waited for")
        var tooLargeHead = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 64)
        guard case .failed(let e, nil) = http(&tooLargeHead, "HTTP/1.1 200 OK\r\nX: " + String(repeating: "y", count: 100)) else {
            return XCTFail()
        }
        XCTAssertEqual(e.code, .upstreamProxyFailed)
    }

    /// A Content-Length near 2^63 on a refusal page must not overflow (which traps the
    /// process): the page waits for more, and is cut at the bound as any long page.
    func testARefusalWithAHugeContentLengthIsCutAtTheBound() {
        for length in ["9223372036854775807", "9223372036854775800", "18446744073709551615"] {
            var h = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 128)
            let head = "HTTP/1.1 403 Forbidden\r\nContent-Length: \(length)\r\n\r\n"
            let step = http(&h, head)
            if case .failed = step { continue }   // a length the parser refuses is a failure, also fine
            XCTAssertEqual(step, .needMore, length)
            guard case .failed(let e, let cut?) = http(&h, head + String(repeating: "x", count: 200)) else {
                XCTFail(length); continue
            }
            XCTAssertEqual(e.code, .upstreamProxyFailed)
            XCTAssertEqual(cut.count, 128, length)
        }
    }

    /// A chunked refusal page ends where its chunking says: not at chunk data that ends in
    /// "0\r\n\r\n"-like bytes, and also after a last chunk with an extension or trailers.
    func testAChunkedRefusalPageEndsAtItsLastChunk() {
        let head = "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n"
        var h = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 1024)
        XCTAssertEqual(http(&h, head + "5\r\nab0\r\n\r\n"), .needMore, "chunk data, not the last chunk")
        let page = head + "5\r\nab0\r\n\r\n0\r\n\r\n"
        guard case .failed(_, let whole?) = http(&h, page + "next") else { return XCTFail() }
        XCTAssertEqual(whole, Array(page.utf8))
        for last in ["0;why=policy\r\n\r\n", "0\r\nX-Reason: policy\r\n\r\n"] {
            var t = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 1024)
            let p = head + "2\r\nno\r\n" + last
            guard case .failed(_, let got?) = http(&t, p) else { XCTFail(last); continue }
            XCTAssertEqual(got, Array(p.utf8), last)
        }
    }

    func testGarbageOrACloseBeforeAnAnswerFails() {
        var h = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 65536)
        guard case .failed(let e, nil) = http(&h, "SSH-2.0-OpenSSH\r\n\r\n") else { return XCTFail() }
        XCTAssertEqual(e.code, .upstreamProxyFailed)
        var closed = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 65536)
        XCTAssertEqual(feed(&closed, Array("HTTP/1.1 2".utf8)) { $0.closed($1) }, .failed(TransportError(.upstreamProxyFailed,
            "the parent proxy http://squid.corp:3128 closed the connection before answering CONNECT api.example:443"), answer: nil))
        var interim = HTTPConnectHandshake(target: origin, parent: squid, maxAnswerBytes: 65536)
        guard case .failed(let i, nil) = http(&interim, "HTTP/1.1 100 Continue\r\n\r\n") else { return XCTFail() }
        XCTAssertEqual(i.code, .upstreamProxyFailed)
    }

    // MARK: SOCKS5

    func testSOCKS5WithoutAuthenticationByName() {
        var h = SOCKS5Handshake(target: origin, parent: socks)
        XCTAssertEqual(h.greeting(), [5, 1, 0])
        XCTAssertEqual(socks5(&h, [5]), .needMore)
        let name = Array("api.example".utf8)
        XCTAssertEqual(socks5(&h, [5, 0]), .send(consumed: 2, [5, 1, 0, 3, UInt8(name.count)] + name + [1, 0xBB]))
        XCTAssertEqual(socks5(&h, [5, 0, 0, 1, 127, 0]), .needMore, "the bound address is read whole")
        XCTAssertEqual(socks5(&h, [5, 0, 0, 1, 127, 0, 0, 1, 0x30, 0x39, 0x16]), .established(consumed: 10))
        XCTAssertEqual(h.state, .done)
    }

    func testSOCKS5UsernamePasswordAndAddressTargets() {
        var parent = socks
        parent.credentials = credentials
        var h = SOCKS5Handshake(target: HTTPAuthority(scheme: "http", host: "10.0.0.7", port: 80), parent: parent)
        XCTAssertEqual(h.greeting(), [5, 2, 0, 2])
        XCTAssertEqual(socks5(&h, [5, 2]), .send(consumed: 2, [1, 5] + Array("alice".utf8) + [6] + Array("s3cret".utf8)))
        XCTAssertEqual(socks5(&h, [1, 0]), .send(consumed: 2, [5, 1, 0, 1, 10, 0, 0, 7, 0, 80]))
        // A domain-name bound address, then an IPv6 target.
        XCTAssertEqual(socks5(&h, [5, 0, 0, 3, 3] + Array("abc".utf8) + [0, 1]), .established(consumed: 4 + 4 + 2))
        var v6 = SOCKS5Handshake(target: HTTPAuthority(scheme: "", host: "::1", port: 443), parent: socks)
        XCTAssertEqual(socks5(&v6, [5, 0]), .send(consumed: 2, [5, 1, 0, 4] + [UInt8](repeating: 0, count: 15) + [1, 1, 0xBB]))
        XCTAssertEqual(socks5(&v6, [5, 0, 0, 4] + [UInt8](repeating: 0, count: 18)), .established(consumed: 22))
    }

    /// A name SOCKS5 cannot carry (over 255 bytes) fails with the cause, instead of the
    /// parent being asked for a cut name, another host than the record's.
    func testSOCKS5RefusesAHostNameLongerThanItCanCarry() {
        let long = String(repeating: "a", count: 250) + ".example"
        var h = SOCKS5Handshake(target: HTTPAuthority(scheme: "https", host: long, port: 443), parent: socks)
        guard case .failed(let e, nil) = socks5(&h, [5, 0]) else { return XCTFail() }
        XCTAssertEqual(e.code, .upstreamProxyFailed)
        XCTAssertTrue(e.message.contains("258 bytes, longer than the 255"), e.message)
        var fits = SOCKS5Handshake(target: HTTPAuthority(scheme: "https", host: String(repeating: "b", count: 255), port: 443), parent: socks)
        guard case .send(2, let request) = socks5(&fits, [5, 0]) else { return XCTFail() }
        XCTAssertEqual(Array(request.prefix(5)), [5, 1, 0, 3, 255])
    }

    func testSOCKS5AuthenticationFailures() {
        var parent = socks
        parent.credentials = credentials
        var refused = SOCKS5Handshake(target: origin, parent: parent)
        _ = socks5(&refused, [5, 2])
        XCTAssertEqual(socks5(&refused, [1, 1]), .failed(TransportError(.upstreamProxyAuthFailed,
            "the SOCKS5 parent socks5://127.0.0.1:1080 refused the username and password (status 1)"), answer: nil))
        var noneSet = SOCKS5Handshake(target: origin, parent: socks)
        guard case .failed(let e, nil) = socks5(&noneSet, [5, 2]) else { return XCTFail() }
        XCTAssertEqual(e.code, .upstreamProxyAuthFailed)
        XCTAssertTrue(e.message.contains("none are set"))
        var noMethod = SOCKS5Handshake(target: origin, parent: parent)
        guard case .failed(let m, nil) = socks5(&noMethod, [5, 0xFF]) else { return XCTFail() }
        XCTAssertEqual(m.code, .upstreamProxyAuthFailed)
    }

    func testEverySOCKS5ReplyCodeIsMapped() {
        let expected: [UInt8: (TransportError.Code, String)] = [
            1: (.upstreamProxyFailed, "general SOCKS server failure"), 2: (.upstreamProxyFailed, "connection not allowed by ruleset"),
            3: (.upstreamConnectFailed, "network unreachable"), 4: (.upstreamConnectFailed, "host unreachable"),
            5: (.upstreamConnectFailed, "connection refused"), 6: (.upstreamTimeout, "TTL expired"),
            7: (.upstreamProxyFailed, "command not supported"), 8: (.upstreamProxyFailed, "address type not supported"),
            9: (.upstreamProxyFailed, "unknown reply"), 0xFF: (.upstreamProxyFailed, "unknown reply"),
        ]
        for (code, (errorCode, text)) in expected {
            var h = SOCKS5Handshake(target: origin, parent: socks)
            _ = socks5(&h, [5, 0])
            XCTAssertEqual(socks5(&h, [5, code, 0, 1, 0, 0, 0, 0, 0, 0]), .failed(TransportError(errorCode,
                "the SOCKS5 parent socks5://127.0.0.1:1080 could not connect to api.example:443: \(text) (reply \(code))"), answer: nil))
        }
    }

    func testSOCKS5ProtocolViolationsAndCloses() {
        for (bytes, afterGreeting) in [([UInt8]([4, 0]), false), ([5, 9], false), ([5, 0, 1, 1, 0, 0, 0, 0, 0, 0], true),
                                       ([5, 0, 0, 7, 0], true), ([6, 0, 0, 1, 0, 0, 0, 0, 0, 0], true)] {
            var h = SOCKS5Handshake(target: origin, parent: socks)
            if afterGreeting { _ = socks5(&h, [5, 0]) }
            guard case .failed(let e, nil) = socks5(&h, bytes) else { return XCTFail("\(bytes)") }
            XCTAssertEqual(e.code, .upstreamProxyFailed)
            XCTAssertTrue(e.message.contains("broke the protocol"), e.message)
        }
        var closed = SOCKS5Handshake(target: origin, parent: socks)
        guard case .failed(let e, nil) = closed.closed() else { return XCTFail() }
        XCTAssertEqual(e.code, .upstreamProxyFailed)
    }

    // MARK: the request head to an HTTP parent

    func testPlainRequestsGoInAbsoluteFormWithTheParentsCredentials() throws {
        let raw = "GET /a?b=1 HTTP/1.1\r\nHost: origin.test:8080\r\nProxy-Authorization: Basic Zm9yOnRhcHdpcmU=\r\nAccept: */*\r\n\r\n"
        guard case .complete(let head, _) = try Array(raw.utf8).withUnsafeBytes({
            try HTTPHeadParser.parseRequestHead($0, maxHeadBytes: 65536)
        }) else { return XCTFail() }
        let authority = HTTPAuthority(scheme: "http", host: "origin.test", port: 8080)
        var parent = squid
        func written() -> String {
            var out: [UInt8] = []
            ParentRequestHead.write(head, authority: authority, originTarget: "/a?b=1", parent: parent, keepUpgrade: false) { capacity, fill in
                var buffer = [UInt8](repeating: 0, count: capacity)
                let n = buffer.withUnsafeMutableBufferPointer { fill($0.baseAddress!) }
                out = Array(buffer.prefix(n))
            }
            return String(decoding: out, as: UTF8.self)
        }
        XCTAssertEqual(written(), "GET http://origin.test:8080/a?b=1 HTTP/1.1\r\nHost: origin.test:8080\r\nAccept: */*\r\n\r\n",
                       "the client's Proxy-Authorization was for Tapwire")
        parent.credentials = credentials
        XCTAssertEqual(written(), "GET http://origin.test:8080/a?b=1 HTTP/1.1\r\nHost: origin.test:8080\r\nAccept: */*\r\n"
                       + "Proxy-Authorization: Basic YWxpY2U6czNjcmV0\r\n\r\n")
    }
}
