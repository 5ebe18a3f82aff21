import Configuration
import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// `listen` objects (reverse, socks5), their `users` files and `replay` blocks.
final class ListenModeConfigurationTests: XCTestCase {
    private var work: URL!

    override func setUpWithError() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-listen-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: work) }

    private func errors(_ text: String) -> [String] {
        if case .failure(let list) = TapwireConfiguration.parse(Array(text.utf8)) { return list.errors.map(\.description) }
        return []
    }

    private func usersFile(_ text: String, mode: Int) throws -> String {
        let url = work.appendingPathComponent("users-\(mode)")
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        return url.path
    }

    func testStringsStayForwardAndObjectsNameTheirMode() throws {
        let c = try TapwireConfiguration.parse(Array(#"""
        {"listen": ["127.0.0.1:8080",
                    {"address": "127.0.0.1:9000", "mode": "reverse", "upstream": "https://api.example.com", "keepHost": true},
                    {"address": "127.0.0.1:9001", "mode": "reverse", "upstream": "http://[::1]:3000/"},
                    {"address": "127.0.0.1:1080", "mode": "socks5"},
                    {"address": "127.0.0.1:8081"}]}
        """#.utf8)).get()
        XCTAssertEqual(c.engine.listen, ["127.0.0.1:8080", "127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:1080", "127.0.0.1:8081"])
        XCTAssertEqual(c.engine.listenerModes, [
            .forward,
            .reverse(ReverseUpstream(authority: HTTPAuthority(scheme: "https", host: "api.example.com", port: 443), keepHost: true)),
            .reverse(ReverseUpstream(authority: HTTPAuthority(scheme: "http", host: "::1", port: 3000), keepHost: false)),
            .socks5(nil),
            .forward,
        ])
        XCTAssertTrue(c.needsOriginTLS, "an https upstream is verified as any origin")
        // One object alone stands for a one-entry list.
        let one = try TapwireConfiguration.parse(Array(#"{"listen": {"address": "127.0.0.1:1080", "mode": "socks5"}}"#.utf8)).get()
        XCTAssertEqual(one.engine.listenerModes, [.socks5(nil)])
    }

    func testBadEntriesNameTheirField() {
        XCTAssertEqual(errors(#"{"listen": [{"mode": "reverse", "upstream": "http://127.0.0.1:3000"}]}"#),
                       ["listen[0].address: required, a numeric HOST:PORT such as 127.0.0.1:9000"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "mode": "reverse"}]}"#),
                       ["listen[0].upstream: required for mode reverse: the origin requests go to, such as http://127.0.0.1:3000"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "mode": "reverse", "upstream": "http://h:3000/api"}]}"#),
                       [#"listen[0].upstream: expected http://HOST[:PORT] or https://HOST[:PORT] without a path, found "http://h:3000/api""#])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "mode": "reverse", "upstream": "ftp://h"}]}"#).count, 1)
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "mode": "tcp"}]}"#),
                       [#"listen[0].mode: expected "forward", "reverse" or "socks5", found "tcp""#])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "mode": "socks5", "keepHost": true}]}"#),
                       ["listen[0].keepHost: only applies to mode reverse"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "users": "u"}]}"#),
                       ["listen[0].users: only applies to mode socks5"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "localhost:9000", "mode": "socks5"}]}"#),
                       [#"listen[0].address: expected a numeric HOST:PORT such as 127.0.0.1:8080 or [::1]:8080, found "localhost:9000""#])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "port": 1}]}"#).first?.hasPrefix("listen[0].port: unknown key"), true)
        XCTAssertEqual(errors(#"{"listen": [true]}"#),
                       [#"listen[0]: expected "HOST:PORT" or an object with address and mode, found a boolean"#])
        // Two modes on one port are still one port twice.
        XCTAssertEqual(errors(#"{"listen": ["127.0.0.1:9000", {"address": "127.0.0.1:9000", "mode": "socks5"}]}"#),
                       ["listen[1]: 127.0.0.1:9000 overlaps listen[0] (127.0.0.1:9000): the same port twice"])
    }

    func testReverseProtocolsTurnOnH2CAndNameTheirErrors() throws {
        let c = try TapwireConfiguration.parse(Array(#"""
        {"listen": [{"address": "127.0.0.1:9000", "mode": "reverse", "upstream": "http://127.0.0.1:3000", "protocols": ["http/1.1", "h2c"]},
                    {"address": "127.0.0.1:9001", "mode": "reverse", "upstream": "http://127.0.0.1:3000", "protocols": ["http/1.1"]}]}
        """#.utf8)).get()
        let upstream = HTTPAuthority(scheme: "http", host: "127.0.0.1", port: 3000)
        XCTAssertEqual(c.engine.listenerModes, [.reverse(ReverseUpstream(authority: upstream, keepHost: false, h2c: true)),
                                                .reverse(ReverseUpstream(authority: upstream, keepHost: false, h2c: false))])
        let reverse = #""address": "127.0.0.1:9000", "mode": "reverse", "upstream": "http://127.0.0.1:3000""#
        XCTAssertEqual(errors(#"{"listen": [{\#(reverse), "protocols": ["http/1.1", "h2"]}]}"#),
                       [#"listen[0].protocols[1]: expected "http/1.1" or "h2c", found "h2" (h2 over TLS is offered by tls.intercept, not here)"#])
        XCTAssertEqual(errors(#"{"listen": [{\#(reverse), "protocols": ["h2c"]}]}"#),
                       [#"listen[0].protocols: must include "http/1.1": a client without the HTTP/2 preface is answered in HTTP/1.1"#])
        XCTAssertEqual(errors(#"{"listen": [{\#(reverse), "protocols": "h2c"}]}"#),
                       [#"listen[0].protocols: expected a list such as ["http/1.1", "h2c"], found the string "h2c""#])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "protocols": ["http/1.1", "h2c"]}]}"#),
                       ["listen[0].protocols: only applies to mode reverse"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:9000", "mode": "socks5", "protocols": ["http/1.1"]}]}"#),
                       ["listen[0].protocols: only applies to mode reverse"])
        XCTAssertEqual(errors(#"{"listen": [{\#(reverse), "protocols": ["http/1.1", "h2c"], "replay": {"from": "/nonexistent"}}]}"#).first,
                       "listen[0].protocols: h2c cannot be combined with replay on the same listener (replay answers HTTP/1.1 only)")
    }

    func testNonLoopbackReverseOrSOCKSListenersNeedAnAllowList() {
        XCTAssertEqual(errors(#"{"listen": [{"address": "0.0.0.0:1080", "mode": "socks5"}]}"#),
                       ["access.allow: required when listening on the non-loopback address 0.0.0.0:1080 (listen[0], mode socks5)"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "0.0.0.0:9000", "mode": "reverse", "upstream": "http://127.0.0.1:3000"}]}"#),
                       ["access.allow: required when listening on the non-loopback address 0.0.0.0:9000 (listen[0], mode reverse)"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "0.0.0.0:1080", "mode": "socks5"}], "access": {"allow": ["10.0.0.0/8"]}}"#), [])
    }

    func testUsersFileIsReadAndRefusedWhenOthersMayReadIt() throws {
        let good = try usersFile("# team\nada:s3cret:with:colons\n\nbob:pw\n", mode: 0o600)
        let c = try TapwireConfiguration.parse(Array(#"{"listen": [{"address": "127.0.0.1:1080", "mode": "socks5", "users": "\#(good)"}]}"#.utf8)).get()
        guard case .socks5(let users?) = c.engine.listenerModes.first else { return XCTFail("\(c.engine.listenerModes)") }
        XCTAssertEqual(users.count, 2)
        XCTAssertEqual(users, SOCKS5Credentials(["ada": "s3cret:with:colons", "bob": "pw"]))

        // CRLF line ends (a file edited on Windows) split as LF ones do.
        let crlf = try usersFile("# team\r\nada:s3cret\r\n\r\nbob:pw\r\n", mode: 0o600)
        let w = try TapwireConfiguration.parse(Array(#"{"listen": [{"address": "127.0.0.1:1080", "mode": "socks5", "users": "\#(crlf)"}]}"#.utf8)).get()
        guard case .socks5(let crlfUsers?) = w.engine.listenerModes.first else { return XCTFail("\(w.engine.listenerModes)") }
        XCTAssertEqual(crlfUsers, SOCKS5Credentials(["ada": "s3cret", "bob": "pw"]))

        let open = try usersFile("ada:pw\n", mode: 0o640)
        let e = errors(#"{"listen": [{"address": "127.0.0.1:1080", "mode": "socks5", "users": "\#(open)"}]}"#)
        XCTAssertEqual(e.count, 1)
        XCTAssertTrue(e[0].hasPrefix("listen[0].users: \(open) may be read by group or others (mode 640)"), e[0])

        let bad = try usersFile("ada\n", mode: 0o600)
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:1080", "mode": "socks5", "users": "\#(bad)"}]}"#),
                       ["listen[0].users: \(bad) line 1: expected user:password"])
        XCTAssertEqual(errors(#"{"listen": [{"address": "127.0.0.1:1080", "mode": "socks5", "users": "/nonexistent/u"}]}"#),
                       ["listen[0].users: /nonexistent/u: No such file or directory"])
    }

    func testReplayBlocksAtTopLevelAndOnAListener() throws {
        let dir = work.path
        let c = try TapwireConfiguration.parse(Array(#"""
        {"listen": ["127.0.0.1:8080", {"address": "127.0.0.1:9000", "mode": "reverse", "upstream": "http://127.0.0.1:3000",
                                        "replay": {"from": "\#(dir)", "match": ["url"], "notFound": "forward"}}],
         "replay": {"from": "\#(dir)", "ignoreParams": ["ts"], "notFound": "502"}}
        """#.utf8)).get()
        let top = try XCTUnwrap(c.replay(ofListener: 0))
        XCTAssertEqual(top.notFound, .badGateway)
        XCTAssertEqual(top.match, ReplayMatch(method: true, url: true, ignoreParams: ["ts"]))
        let own = try XCTUnwrap(c.replay(ofListener: 1))
        XCTAssertEqual(own.notFound, .forward)
        XCTAssertFalse(own.match.method)
        XCTAssertEqual(ReplaySettings(directory: dir).notFound, .notFound, "the default answers 404: offline means no network")

        XCTAssertEqual(errors(#"{"replay": {"from": "/nonexistent/dir"}}"#), ["replay.from: /nonexistent/dir does not exist"])
        XCTAssertEqual(errors(#"{"replay": {}}"#), ["replay.from: required: the log directory to answer from"])
        XCTAssertEqual(errors(#"{"replay": {"from": "\#(dir)", "notFound": "410"}}"#),
                       [#"replay.notFound: expected "forward", "404" or "502", found "410""#])
        XCTAssertEqual(errors(#"{"replay": {"from": "\#(dir)", "match": ["method", "body"]}}"#).first,
                       #"replay.match[1]: expected one of "method", "url", found "body""#)
        XCTAssertEqual(errors(#"{"replay": {"from": "\#(dir)", "match": ["method"]}}"#),
                       [#"replay.match: must include "url": without it every request would get the same answer"#])

        var flagged = try TapwireConfiguration.parse(Array("{}".utf8)).get()
        XCTAssertEqual(flagged.override(replayFrom: dir), [])
        XCTAssertEqual(flagged.replay(ofListener: 0)?.directory, dir)
        XCTAssertEqual(flagged.override(replayFrom: "/nonexistent/dir").map(\.path), ["--replay-from"])

        // An h2c listener's HTTP/2 streams would go to the network, whichever replay applies.
        let h2c = #"{"address": "127.0.0.1:9000", "mode": "reverse", "upstream": "http://127.0.0.1:3000", "protocols": ["http/1.1", "h2c"]}"#
        XCTAssertEqual(errors(#"{"listen": [\#(h2c)], "replay": {"from": "\#(dir)"}}"#),
                       ["listen[0].protocols: h2c cannot be combined with replay on the same listener (replay answers HTTP/1.1 only): the top-level replay applies to it"])
        var withH2C = try TapwireConfiguration.parse(Array(#"{"listen": [\#(h2c)]}"#.utf8)).get()
        XCTAssertEqual(withH2C.override(replayFrom: dir).map { "\($0.path): \($0.message)" },
                       ["--replay-from: listen[0]: h2c cannot be combined with replay on the same listener (replay answers HTTP/1.1 only)"])
    }
}
