import Foundation
import HTTP1
import ResponseSerialization  // not @testable: the README's reader sees only the public API
import XCTest

/// The README's serializer example ("Adding a serializer is a closure"), compiled and run
/// against the library's public API. The code between the markers is the README's block
/// verbatim, and the first test holds the two to the same text, so neither can drift.
final class ReadmeExampleTests: XCTestCase {
    /// What the example's `print` wrote, from the queue its handler runs on.
    private final class Output: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
    }

    /// The README's block, as this file compiles it below.
    private static let example = """
        let upper = DataResponseSerializer<String> { request, response, data, error in
            if let error { return .failure(error) }
            return .success(String(decoding: data ?? Data(), as: UTF8.self).uppercased())
        }
        exchange.validate().response(queue: .global(), responseSerializer: upper) { response in
            print(response.result, response.timeline)
        }
        """

    func testTheReadmeShowsTheExampleThisFileRuns() throws {
        let readme = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        XCTAssertTrue(text.contains("```swift\n" + ReadmeExampleTests.example + "\n```"),
                      "README.md's serializer example differs from ReadmeExampleTests.example")
        // And the text above is the code below, minus the markers and the indentation.
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        guard let begin = source.range(of: "// README example begins\n"),
              let end = source.range(of: "        // README example ends", range: begin.upperBound..<source.endIndex) else {
            return XCTFail("markers missing")
        }
        let compiled = source[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }
            .joined(separator: "\n")
        XCTAssertEqual(compiled, ReadmeExampleTests.example + "\n")
    }

    func testTheReadmeSerializerExampleRunsAsWritten() {
        let exchange = CompletedExchange(
            request: HTTPRequestHead(method: "GET", target: "/greeting", headers: [("Accept", "text/plain")]),
            response: HTTPResponseHead(status: 200, reason: "OK", headers: [("Content-Type", "text/plain")]),
            data: Data("hello".utf8), requestStartTime: 1_000, initialResponseTime: 1_000.25,
            requestCompletedTime: 1_000.5)
        let output = Output()
        let handled = expectation(description: "the example's handler runs")
        func print(_ items: Any...) {
            output.append(items.map { String(describing: $0) }.joined(separator: " "))
            handled.fulfill()
        }

        // README example begins
        let upper = DataResponseSerializer<String> { request, response, data, error in
            if let error { return .failure(error) }
            return .success(String(decoding: data ?? Data(), as: UTF8.self).uppercased())
        }
        exchange.validate().response(queue: .global(), responseSerializer: upper) { response in
            print(response.result, response.timeline)
        }
        // README example ends

        wait(for: [handled], timeout: 10)
        XCTAssertEqual(output.all.count, 1)
        let line = output.all.first ?? ""
        XCTAssertTrue(line.hasPrefix(#"success("HELLO") Timeline: { "Latency": 0.250 secs, "Request Duration": 0.500 secs"#),
                      line)
    }

    /// The same serializer after a failed validation: the error passes through unchanged.
    func testTheExampleSerializerPassesAValidationFailureThrough() {
        let exchange = CompletedExchange(
            request: HTTPRequestHead(method: "GET", target: "/", headers: [("Accept", "text/plain")]),
            response: HTTPResponseHead(status: 404, reason: "Not Found", headers: [("Content-Type", "text/plain")]),
            data: Data("gone".utf8), requestStartTime: 1, requestCompletedTime: 2)
        let upper = DataResponseSerializer<String> { _, _, data, error in
            if let error { return .failure(error) }
            return .success(String(decoding: data ?? Data(), as: UTF8.self).uppercased())
        }
        let handled = expectation(description: "handler")
        exchange.validate().response(queue: .global(), responseSerializer: upper) { response in
            guard case .failure(TapwireError.responseValidationFailed(.unacceptableStatusCode(404))) = response.result else {
                return XCTFail("\(response.result)")
            }
            handled.fulfill()
        }
        wait(for: [handled], timeout: 10)
    }
}
