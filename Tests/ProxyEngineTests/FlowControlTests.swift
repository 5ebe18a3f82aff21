import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// Bodies larger than the high-water mark: reading pauses and resumes on both
/// sides, nothing is lost, and the capture still counts every byte.
final class FlowControlTests: XCTestCase {
    func testLargeResponseToALateReaderArrivesWholeAndIsCountedWhole() throws {
        let origin = try origin()
        let size = 2_000_000
        let proxy = try RunningEngine { $0.highWaterBytes = 16 * 1024; $0.captureMaxBodyBytes = 100_000 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/big?size=\(size)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        // Not reading for a moment lets the client's buffer pass the high-water mark.
        usleep(200_000)
        let responses = client.readResponses(1, timeout: 30)
        XCTAssertEqual(responses.first?.body.count, size)
        XCTAssertTrue(responses.first?.body.allSatisfy { $0 == UInt8(ascii: "x") } ?? false)

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.responseBody.totalBytes, UInt64(size))
        XCTAssertEqual(x.responseBody.bytes.count, 100_000)
        XCTAssertTrue(x.responseBody.truncated)
        XCTAssertNil(x.error)
    }

    func testLargeUploadStreamsThroughAndIsCountedWhole() throws {
        let origin = try origin()
        let size = 1_500_000
        let proxy = try RunningEngine { $0.highWaterBytes = 16 * 1024; $0.captureMaxBodyBytes = 1000 }
        let client = try RawClient(port: proxy.port)
        let body = [UInt8](repeating: UInt8(ascii: "u"), count: size)
        let sender = Thread {
            client.send("POST \(origin.url("/sink")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: \(size)\r\n\r\n")
            client.send(body)
        }
        sender.start()
        let responses = client.readResponses(1, timeout: 30)
        XCTAssertEqual(responses.first.map { String(decoding: $0.body, as: UTF8.self) }, String(size), "the origin counted every byte")

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.requestBody.totalBytes, UInt64(size))
        XCTAssertEqual(x.requestBody.bytes, Array(body.prefix(1000)))
        XCTAssertNil(x.error)
    }
}
