import XCTest
@testable import ProxyEngine

final class AdminEndpointTests: XCTestCase {
    func testPathsBeforeAnyQueryNameTheEndpoints() {
        XCTAssertEqual(AdminEndpoint(target: "/healthz"), .health)
        XCTAssertEqual(AdminEndpoint(target: "/healthz?verbose=1"), .health)
        XCTAssertEqual(AdminEndpoint(target: "/metrics"), .metrics)
        XCTAssertEqual(AdminEndpoint(target: "/metrics?"), .metrics)
    }

    func testOtherPathsAreNotEndpoints() {
        for target in ["", "/", "/health", "/healthzz", "/healthz/", "/metrics/x", "/METRICS", "healthz",
                       "/healthz#x", "/small.json", "/héalthz", "/metric\u{301}s", "/x?/healthz"] {
            XCTAssertNil(AdminEndpoint(target: target), target)
        }
    }
}
