@testable import TLSInterception
import XCTest

final class HostNameTests: XCTestCase {
    func testIPLiteralsAreCanonicalised() throws {
        XCTAssertEqual(try HostName("127.0.0.1").kind, .ipAddress([127, 0, 0, 1]))
        XCTAssertEqual(try HostName("[::1]").text, "::1")
        XCTAssertEqual(try HostName("0:0:0:0:0:0:0:1").text, "::1")
        XCTAssertEqual(try HostName("2001:DB8::1").text, "2001:db8::1")
    }

    func testDNSNamesAreLowerCasedWithoutTrailingDot() throws {
        let name = try HostName("API.Example.COM.")
        XCTAssertEqual(name.text, "api.example.com")
        XCTAssertEqual(name.kind, .dns)
        XCTAssertEqual(try HostName("_srv.example.com").text, "_srv.example.com")
    }

    /// A dotted quad with a trailing dot is that address, never a DNS name whose text would
    /// be the address's (one cache key for two certificates).
    func testAnIPv4AddressWithATrailingDotIsTheAddress() throws {
        let name = try HostName("1.2.3.4.")
        XCTAssertEqual(name.kind, .ipAddress([1, 2, 3, 4]))
        XCTAssertEqual(name.text, "1.2.3.4")
    }

    func testNotQuiteIPv4IsADNSNameNotAnAddress() throws {
        // inet_pton accepts only dotted quads, so these never become IP SANs.
        XCTAssertEqual(try HostName("127.1").kind, .dns)
        XCTAssertEqual(try HostName("1.2.3.4.5").kind, .dns)
    }
}
