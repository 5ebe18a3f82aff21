import XCTest

final class ProxyEngineTestsPlaceholder: XCTestCase {
    func testBuilds() {}
}
