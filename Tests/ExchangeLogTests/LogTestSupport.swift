import Foundation
import XCTest
@testable import ExchangeLog

/// A fresh directory under /tmp, removed again by `remove()`.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/exchangelog-test-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw NSError(domain: "mkdtemp", code: Int(errno))
        }
        path = String(cString: created)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Whether `condition` became true within `timeout` seconds (checked every 2 ms).
func waitUntil(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// A wall clock the test moves by hand.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double

    init(_ start: Double) { value = start }

    func set(_ time: Double) { lock.withLock { value = time } }

    var clock: LogClock { { [self] in lock.withLock { value } } }
}

/// Fails chosen operations with an errno while switched on.
final class FaultSwitch: @unchecked Sendable {
    private let lock = NSLock()
    private var failing: [LogFileOperation: Int32] = [:]

    func fail(_ operations: [LogFileOperation], with code: Int32) {
        lock.withLock { for operation in operations { failing[operation] = code } }
    }

    func clear() { lock.withLock { failing = [:] } }

    var injector: LogFaultInjector { { [self] operation, _ in lock.withLock { failing[operation] } } }
}

enum LogTestFiles {
    /// `{"n":123,"pad":"xxx…"}`, padded so every record is `length` bytes.
    static func record(_ n: Int, length: Int = 64) -> [UInt8] {
        let head = #"{"n":\#(n),"pad":""#
        let padding = max(0, length - head.utf8.count - 2)
        return Array((head + String(repeating: "x", count: padding) + #""}"#).utf8)
    }

    /// The number of a whole test record, or nil for anything else (a torn line included).
    static func recordNumber(_ line: Substring) -> Int? {
        guard line.hasPrefix(#"{"n":"#), line.hasSuffix(#""}"#),
              let comma = line.firstIndex(of: ",") else { return nil }
        let digits = line[line.index(line.startIndex, offsetBy: 5)..<comma]
        guard let n = Int(digits) else { return nil }
        let rest = line[comma...]
        guard rest.hasPrefix(#","pad":""#) else { return nil }
        let pad = rest.dropFirst(8).dropLast(2)
        guard pad.allSatisfy({ $0 == "x" }) else { return nil }
        return n
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The file's text, gunzipped when it ends in .gz (failing the test if it is not whole gzip).
    static func text(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        var data = try bytes(path)
        if path.hasSuffix(".gz") {
            let inflated = Gzip.decompress(data)
            XCTAssertNotNil(inflated, "\(path) is not complete gzip", file: file, line: line)
            data = inflated ?? []
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Lines of a file that must end in a newline (no torn tail).
    static func lines(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> [Substring] {
        let content = try text(path, file: file, line: line)
        if content.isEmpty { return [] }
        XCTAssertTrue(content.hasSuffix("\n"), "\(path) ends in a partial line", file: file, line: line)
        return content.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// The files as `ls` shows them: without the writer's `.tapwire.jsonl.lock`.
    static func names(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// `lost` of a loss record line, or nil for any other line.
    static func lossCount(_ line: Substring) -> Int? {
        guard line.hasPrefix(#"{"kind":"loss","lost":"#) else { return nil }
        let rest = line.dropFirst(22)
        return Int(rest.prefix { $0.isNumber })
    }
}
