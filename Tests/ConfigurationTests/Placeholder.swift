import XCTest

final class ConfigurationTestsPlaceholder: XCTestCase {
    func testBuilds() {}
}
