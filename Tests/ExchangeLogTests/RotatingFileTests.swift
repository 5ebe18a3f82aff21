import Foundation
import XCTest
@testable import ExchangeLog

/// RotatingFile on its own, as a caller other than LogWriter would use it.
final class RotatingFileTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testExplicitRotateReopenAndClose() throws {
        let clock = ManualClock(1_796_206_272)
        let file = RotatingFile(settings: LogSettings(directory: directory.path + "/x/y", rotateInterval: .never,
                                                      compress: true),
                                clock: clock.clock)
        try file.write(Array("{\"a\":1}\n".utf8))
        XCTAssertEqual(file.size, 8)
        try file.rotate()
        XCTAssertEqual(file.size, 0)
        try file.write(Array("{\"a\":2}\n".utf8))
        try file.reopen()
        try file.write(Array("{\"a\":3}\n".utf8))
        file.close()  // waits for its archiver

        XCTAssertEqual(LogTestFiles.names(directory.path + "/x/y"), ["tapwire-20261202T101112.jsonl.gz", "tapwire.jsonl"])
        XCTAssertEqual(try LogTestFiles.text(directory.path + "/x/y/tapwire-20261202T101112.jsonl.gz"), "{\"a\":1}\n")
        XCTAssertEqual(try LogTestFiles.text(directory.path + "/x/y/tapwire.jsonl"), "{\"a\":2}\n{\"a\":3}\n")
        XCTAssertEqual(file.rotations, 1)
    }

    func testEmptyFileIsNeverRotated() throws {
        let clock = ManualClock(0)
        let file = RotatingFile(settings: LogSettings(directory: directory.path, maxFileBytes: 10,
                                                      rotateInterval: .seconds(1), compress: false),
                                clock: clock.clock)
        try file.open()
        clock.set(100)
        try file.rotateIfDue()
        file.close()
        XCTAssertEqual(LogTestFiles.names(directory.path), ["tapwire.jsonl"])
        XCTAssertEqual(file.rotations, 0)
    }

    func testFileWithoutExtensionRotatesWithStampSuffix() throws {
        let clock = ManualClock(1_796_206_272)
        let file = RotatingFile(settings: LogSettings(directory: directory.path, fileName: "exchanges",
                                                      maxFileBytes: 10, rotateInterval: .never, compress: false),
                                clock: clock.clock)
        try file.write(Array("0123456789\n".utf8))
        try file.write(Array("x\n".utf8))
        file.close()
        XCTAssertEqual(LogTestFiles.names(directory.path), ["exchanges", "exchanges-20261202T101112"])
    }
}
