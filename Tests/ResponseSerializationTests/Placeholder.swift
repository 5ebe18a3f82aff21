import XCTest

final class ResponseSerializationTestsPlaceholder: XCTestCase {
    func testBuilds() {}
}
