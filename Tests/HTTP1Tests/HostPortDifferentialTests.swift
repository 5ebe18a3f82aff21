import XCTest
@testable import HTTP1

/// `RequestTarget.parseHostPort` works on raw bytes with index loops; the slice-and-string
/// version it replaced is kept here as the reference, and both must agree on every input:
/// the same host and port, or the same error.
final class HostPortDifferentialTests: XCTestCase {
    /// The slice-and-string version, unchanged but for its name.
    static func reference(_ a: ArraySlice<UInt8>, scheme: String) throws(HTTPParseError) -> (String, Int) {
        if a.contains(UInt8(ascii: "@")) { throw HTTPParseError(.malformed, "userinfo in request-target") }
        var hostBytes: ArraySlice<UInt8>
        var rest: ArraySlice<UInt8>
        if a.first == UInt8(ascii: "[") {
            guard let close = a.firstIndex(of: UInt8(ascii: "]")) else {
                throw HTTPParseError(.malformed, "unterminated IPv6 literal")
            }
            hostBytes = a[(a.startIndex + 1)..<close]
            guard hostBytes.contains(UInt8(ascii: ":")),
                  hostBytes.allSatisfy({ ByteClass.hexValue($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else {
                throw HTTPParseError(.malformed, "invalid IPv6 literal")
            }
            rest = a[(close + 1)...]
        } else {
            let colon = a.firstIndex(of: UInt8(ascii: ":")) ?? a.endIndex
            hostBytes = a[..<colon]
            rest = a[colon...]
            guard hostBytes.allSatisfy({ $0 < 0x80 && ($0.isLetterOrDigit || "-._~%!$&'()*+,;=".utf8.contains($0)) }) else {
                throw HTTPParseError(.malformed, "invalid host")
            }
        }
        guard !hostBytes.isEmpty else { throw HTTPParseError(.malformed, "missing host") }
        let host = String(decoding: hostBytes, as: UTF8.self).lowercased()
        let port: Int
        if rest.isEmpty || rest == [UInt8(ascii: ":")] {
            switch scheme {
            case "http": port = 80
            case "https": port = 443
            default: throw HTTPParseError(.malformed, "CONNECT target without port")
            }
        } else {
            guard rest.first == UInt8(ascii: ":") else { throw HTTPParseError(.malformed, "invalid authority") }
            let digits = rest.dropFirst()
            guard digits.count <= 5, digits.allSatisfy(ByteClass.isDigit) else {
                throw HTTPParseError(.malformed, "invalid port")
            }
            let value = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
            guard (1...65535).contains(value) else { throw HTTPParseError(.malformed, "invalid port") }
            port = value
        }
        return (host, port)
    }

    func outcome(_ body: () throws(HTTPParseError) -> (String, Int)) -> String {
        do { let (h, p) = try body(); return "\(h) \(p)" } catch { return "error \(error.reason)" }
    }

    func testAgreesWithTheReference() {
        let fixed = ["example.com", "EXAMPLE.com:8080", "h:", "h:0", "h:65535", "h:65536", "h:123456", "h:08",
                     "[::1]", "[::1]:443", "[::1", "[FE80::A.b]:1", "[zz::1]", "[1.2]", "[]", "", ":80", "a@b",
                     "a b", "h:8x", "h:-1", "%41.x", "xn--bcher-kva.example", "h]:1", "[::1]x", "[::1]:", "é.com"]
        var inputs = fixed.map { Array($0.utf8) }
        // Random authorities over the bytes that matter to the parser, with a fixed seed.
        let alphabet = Array("aZ09.-_~%!$&'()*+,;=:[]@/ ?#".utf8) + [0xC3, 0xA9, 0x00, 0x7F]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let length = Int(state >> 60)
            var bytes: [UInt8] = []
            for _ in 0..<length {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.append(alphabet[Int(state >> 33) % alphabet.count])
            }
            inputs.append(bytes)
        }
        for bytes in inputs {
            for scheme in ["http", "https", ""] {
                // A slice that does not start at 0, as parseAbsolute passes it.
                let padded = [UInt8(ascii: "x")] + bytes
                let slice = padded[1...]
                XCTAssertEqual(outcome { () throws(HTTPParseError) in
                                   try slice.withUnsafeBufferPointer { RequestTarget.parseHostPort($0, scheme: scheme) }.get()
                               },
                               outcome { () throws(HTTPParseError) in try Self.reference(slice, scheme: scheme) },
                               "\(String(decoding: bytes, as: UTF8.self)) (\(bytes)) scheme \(scheme)")
            }
        }
    }
}

private extension UInt8 {
    var isLetterOrDigit: Bool {
        (self >= 0x61 && self <= 0x7A) || (self >= 0x41 && self <= 0x5A) || (self >= 0x30 && self <= 0x39)
    }
}
