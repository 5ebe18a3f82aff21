import Configuration
import Foundation
import ProxyEngine
import XCTest

/// `upstream.proxy`, `upstream.proxyCredentialsFile`, `upstream.noProxy`.
final class ParentProxyConfigurationTests: XCTestCase {
    private func parse(_ text: String) -> Result<TapwireConfiguration, ConfigErrorList> {
        TapwireConfiguration.parse(Array(text.utf8))
    }

    private func errors(_ text: String) -> [String] {
        if case .failure(let list) = parse(text) { return list.errors.map(\.description) }
        return []
    }

    private func parent(_ url: String) throws -> ParentProxy? {
        try parse(#"{"upstream": {"proxy": "\#(url)"}}"#).get().parentProxy.parent
    }

    func testEachParentKindWithAndWithoutCredentials() throws {
        XCTAssertNil(try parse("{}").get().parentProxy.parent)
        XCTAssertNil(try parse(#"{"upstream": {"proxy": null}}"#).get().parentProxy.parent)
        XCTAssertEqual(try parent("http://squid.corp:3128"), ParentProxy(kind: .http, host: "squid.corp", port: 3128))
        XCTAssertEqual(try parent("HTTPS://proxy.corp:443/"), ParentProxy(kind: .https, host: "proxy.corp", port: 443))
        XCTAssertEqual(try parent("socks5://[::1]:1080"), ParentProxy(kind: .socks5, host: "::1", port: 1080))
        XCTAssertEqual(try parent("socks5h://127.0.0.1:1080")?.kind, .socks5, "curl's socks5h is what socks5 does")
        let withCredentials = try XCTUnwrap(try parent("http://al%40ice:p%3Ass:w@10.0.0.1:8080"))
        XCTAssertEqual(withCredentials.credentials, ParentCredentials(user: "al@ice", password: "p:ss:w"))
        XCTAssertEqual(withCredentials.via, "http://10.0.0.1:8080")
    }

    func testBadParentsNameTheKeyAndNeverQuoteTheCredentials() {
        let cases: [(String, String)] = [
            ("squid:3128", "upstream.proxy: expected http://HOST:PORT, https://HOST:PORT or socks5://HOST:PORT (user:password@ optional), found \"squid:3128\""),
            ("ftp://squid:3128", "upstream.proxy: the scheme must be http, https or socks5, found \"ftp://squid:3128\""),
            ("http://squid", "upstream.proxy: the port is missing (HOST:PORT), found \"http://squid\""),
            ("http://squid:0", "upstream.proxy: the port must be 1-65535, found \"http://squid:0\""),
            ("http://squid:3128/path", "upstream.proxy: a parent proxy is HOST:PORT without a path, found \"http://squid:3128/path\""),
            ("http://secret-user:secret-pass@squid", "upstream.proxy: the port is missing (HOST:PORT), found \"http://[credentials]@squid\""),
            ("http://secret-only@squid:3128", "upstream.proxy: the credentials before @ must be user:password (percent-encoded where needed), found \"http://[credentials]@squid:3128\""),
            ("user:secret@squid:3128", "upstream.proxy: expected http://HOST:PORT, https://HOST:PORT or socks5://HOST:PORT (user:password@ optional), found \"[credentials]@squid:3128\""),
            ("socks5://u:secret@x:1080/p@th", "upstream.proxy: the port is missing (HOST:PORT), found \"socks5://[credentials]@th\""),
        ]
        for (value, expected) in cases {
            let found = errors(#"{"upstream": {"proxy": "\#(value)"}}"#)
            XCTAssertEqual(found, [expected])
            XCTAssertFalse(found.joined().contains("secret"), "credentials quoted in \(found)")
        }
        XCTAssertEqual(errors(#"{"upstream": {"proxy": 3128}}"#), ["upstream.proxy: expected a string, found the number 3128"])
        let long = String(repeating: "u", count: 256)
        XCTAssertEqual(errors(#"{"upstream": {"proxy": "socks5://\#(long):p@h:1080"}}"#),
                       ["upstream.proxy: a SOCKS5 user name and password are at most 255 bytes each"])
    }

    func testCredentialsFileIsReadAndRefusedWhenOthersCanReadIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-cred-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("parent.cred").path
        try "alice:s3cr:et\n".write(toFile: file, atomically: false, encoding: .utf8)
        chmod(file, 0o600)
        let config = #"{"upstream": {"proxy": "socks5://127.0.0.1:1080", "proxyCredentialsFile": "\#(file)"}}"#
        XCTAssertEqual(try parse(config).get().parentProxy.parent?.credentials, ParentCredentials(user: "alice", password: "s3cr:et"))
        try "alice:s3cr:et\r\n".write(toFile: file, atomically: false, encoding: .utf8)
        XCTAssertEqual(try parse(config).get().parentProxy.parent?.credentials, ParentCredentials(user: "alice", password: "s3cr:et"),
                       "a CRLF line end is not part of the password")
        try "alice:s3cr:et\r\nbob:x\r\n".write(toFile: file, atomically: false, encoding: .utf8)
        XCTAssertEqual(errors(config), ["upstream.proxyCredentialsFile: \(file) must hold one line user:password"])
        try "alice:s3cr:et\n".write(toFile: file, atomically: false, encoding: .utf8)
        chmod(file, 0o640)
        XCTAssertEqual(errors(config), ["upstream.proxyCredentialsFile: \(file) is readable by group or others (mode 640); chmod 600 it"])
        chmod(file, 0o604)
        XCTAssertEqual(errors(config).count, 1)
        chmod(file, 0o600)
        XCTAssertEqual(errors(#"{"upstream": {"proxy": "http://a:b@h:1", "proxyCredentialsFile": "\#(file)"}}"#),
                       ["upstream.proxyCredentialsFile: upstream.proxy already holds credentials; give them in one place"])
        XCTAssertEqual(errors(#"{"upstream": {"proxyCredentialsFile": "\#(file)"}}"#),
                       ["upstream.proxyCredentialsFile: is set but upstream.proxy is not"])
        XCTAssertEqual(errors(#"{"upstream": {"proxy": "http://h:1", "proxyCredentialsFile": "/nonexistent/cred"}}"#),
                       ["upstream.proxyCredentialsFile: /nonexistent/cred: No such file or directory"])
        try "no colon here".write(toFile: file, atomically: false, encoding: .utf8)
        XCTAssertEqual(errors(config), ["upstream.proxyCredentialsFile: \(file) must hold one line user:password"])
    }

    func testNoProxyTakesHostGlobsAndRangesAndDefaultsToLoopback() throws {
        let defaults = try parse(#"{"upstream": {"proxy": "http://squid:3128"}}"#).get().parentProxy
        let routing = defaults.routing(parentTLS: nil)
        XCTAssertNil(routing.parent(forHost: "localhost"))
        XCTAssertNil(routing.parent(forHost: "127.0.0.1"))
        XCTAssertNil(routing.parent(forHost: "::1"))
        XCTAssertEqual(routing.parent(forHost: "example.com")?.via, "http://squid:3128")
        XCTAssertEqual(routing.parent(forHost: "10.1.2.3")?.via, "http://squid:3128")

        let custom = try parse(#"{"upstream": {"proxy": "http://squid:3128", "noProxy": ["*.Corp.example", "10.0.0.0/8", "fd00::/8"]}}"#)
            .get().parentProxy.routing(parentTLS: nil)
        XCTAssertNil(custom.parent(forHost: "git.corp.example"))
        XCTAssertNil(custom.parent(forHost: "GIT.CORP.EXAMPLE."), "any case, a trailing dot ignored")
        XCTAssertNil(custom.parent(forHost: "10.200.0.1"))
        XCTAssertNil(custom.parent(forHost: "fd12::1"))
        XCTAssertNotNil(custom.parent(forHost: "127.0.0.1"), "a list given replaces the default")
        XCTAssertNotNil(custom.parent(forHost: "corp.example.org"))
        XCTAssertNotNil(custom.parent(forHost: "11.0.0.1"))

        XCTAssertEqual(errors(#"{"upstream": {"noProxy": ["ok.example", "http://x", "host:80", ""]}}"#), [
            #"upstream.noProxy[1]: expected a host glob such as *.corp.example or a range such as 10.0.0.0/8, found "http://x""#,
            #"upstream.noProxy[2]: expected a host glob such as *.corp.example or a range such as 10.0.0.0/8, found "host:80""#,
            #"upstream.noProxy[3]: expected a host glob such as *.corp.example or a range such as 10.0.0.0/8, found """#,
        ])
        XCTAssertNil(try parse(#"{"upstream": {"proxy": "http://squid:3128", "noProxy": "*"}}"#).get().parentProxy
            .routing(parentTLS: nil).parent(forHost: "anything"), "one string stands for a list")
    }

    func testCredentialsNeverPrint() throws {
        let parent = try XCTUnwrap(try parent("socks5://alice:hunter2@127.0.0.1:1080"))
        for text in ["\(parent)", String(describing: parent), String(reflecting: parent), "\(parent.credentials as Any)",
                     try parse(#"{"upstream": {"proxy": "socks5://alice:hunter2@127.0.0.1:1080"}}"#).get().summary] {
            XCTAssertFalse(text.contains("hunter2"), text)
            XCTAssertFalse(text.contains("alice"), text)
        }
        var dumped = ""
        dump(parent, to: &dumped)
        XCTAssertFalse(dumped.contains("hunter2"), dumped)
    }
}
