import XCTest

final class HTTP1TestsPlaceholder: XCTestCase {
    func testBuilds() {}
}
