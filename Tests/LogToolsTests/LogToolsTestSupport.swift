import Foundation
import XCTest
import ResponseSerialization

/// A fresh directory under /tmp, removed after the test.
final class TemporaryLogDirectory {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path + "/logtools-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = base
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    func write(_ name: String, _ text: String) {
        XCTAssertTrue(FileManager.default.createFile(atPath: path + "/" + name, contents: Data(text.utf8)))
    }

    func append(_ name: String, _ text: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path + "/" + name))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
    }

    func rename(_ from: String, _ to: String) throws {
        try FileManager.default.moveItem(atPath: path + "/" + from, toPath: path + "/" + to)
    }

    /// Writes `text` gzip-compressed by the system's gzip (the format the log archiver produces).
    func writeGzip(_ name: String, _ text: String) throws {
        let plain = path + "/" + name + ".source"
        XCTAssertTrue(FileManager.default.createFile(atPath: plain, contents: Data(text.utf8)))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
        process.arguments = ["-n", "-c", plain]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let compressed = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        try FileManager.default.removeItem(atPath: plain)
        XCTAssertTrue(FileManager.default.createFile(atPath: path + "/" + name, contents: compressed))
    }
}

/// Record lines shaped like the writer's (see docs/records.md).
enum Fixture {
    /// An http record; `number` goes into the id and the URL so tests can tell records apart.
    static func http(_ number: Int, method: String = "GET", url: String? = nil, status: Int? = 200,
                     mimeType: String = "application/json", serializer: String = "json",
                     result: String = #"{"success":{"items":[1,2,3]}}"#, error: String = "null",
                     requestHeaders: String = #"[["Host","api.local:8080"],["Authorization","[redacted]"]]"#,
                     responseHeaders: String? = nil, requestBody: String = "",
                     metrics: String = #"{"dns":null,"connect":0.00011,"tls":null,"send":0.00001,"wait":0.0011,"receive":0.00084,"connectionReused":false,"upstream":"127.0.0.1:8080"}"#,
                     start: String = "2026-12-02T10:11:12.123456Z", dataSize: Int = 1024, truncated: Bool = false) -> String {
        let url = url ?? "http://api.local:8080/v1/items/\(number)?x=1"
        let response: String
        if let status {
            let headers = responseHeaders ?? #"[["Content-Type","\#(mimeType)"],["Content-Encoding","gzip"]]"#
            response = #"{"status":\#(status),"reason":"\#(reason(status))","httpVersion":"HTTP/1.1","headers":\#(headers),"bodySize":312,"mimeType":"\#(mimeType)","charset":null}"#
        } else {
            response = "null"
        }
        let data = status == nil ? "null"
            : #"{"size":\#(dataSize),"captured":\#(dataSize),"truncated":\#(truncated),"contentEncoding":"gzip"}"#
        return #"{"id":"0000018c2b1f4a1e-\#(String(format: "%06d", number))","kind":"http","client":"127.0.0.1:53422","#
            + #""request":{"method":"\#(method)","url":"\#(url)","httpVersion":"HTTP/1.1","headers":\#(requestHeaders),"bodySize":\#(requestBody.utf8.count)\#(requestBody.isEmpty ? "" : #","body":"\#(requestBody)""#)},"#
            + #""response":\#(response),"data":\#(data),"rule":"default","serializer":"\#(serializer)","#
            + #""result":\#(result),"error":\#(error),"#
            + #""timeline":{"requestStartTime":"\#(start)","initialResponseTime":"2026-12-02T10:11:12.124666Z","requestCompletedTime":"2026-12-02T10:11:12.125506Z","serializationCompletedTime":"2026-12-02T10:11:12.125536Z","latency":0.00121,"requestDuration":0.0021,"serializationDuration":0.00003,"totalDuration":0.00208},"#
            + #""metrics":\#(metrics)}"#
    }

    static func tunnel(_ number: Int, error: String = "null", closedBy: String = "client") -> String {
        #"{"id":"0000018c2b1f4a1e-\#(String(format: "%06d", number))","kind":"tunnel","client":"127.0.0.1:53500","target":"api.github.com:443","status":200,"bytesFromClient":1229,"bytesFromUpstream":35328,"startTime":"2026-12-02T10:11:14.500000Z","endTime":"2026-12-02T10:11:16.023000Z","duration":1.523,"closedBy":"\#(closedBy)","error":\#(error)}"#
    }

    /// An upgraded exchange: the upgrade request and its 101, then byte counts as for a tunnel.
    static func websocket(_ number: Int) -> String {
        #"{"id":"0000018c2b1f4a1e-\#(String(format: "%06d", number))","kind":"websocket","client":"127.0.0.1:53600","target":"chat.local:80","#
            + #""request":{"method":"GET","url":"http://chat.local/socket","httpVersion":"HTTP/1.1","headers":[["Upgrade","websocket"],["Connection","Upgrade"]],"bodySize":0},"#
            + #""response":{"status":101,"reason":"Switching Protocols","httpVersion":"HTTP/1.1","headers":[["Upgrade","websocket"]],"bodySize":0,"mimeType":null,"charset":null},"#
            + #""status":101,"bytesFromClient":1229,"bytesFromUpstream":35328,"startTime":"2026-12-02T10:11:17.250000Z","endTime":"2026-12-02T10:11:19.250000Z","duration":2.0,"closedBy":"upstream","error":null}"#
    }

    static func loss(_ lost: Int, reason: String = "disk full") -> String {
        #"{"kind":"loss","lost":\#(lost),"time":"2026-12-02T10:11:15.000000Z","reason":"\#(reason)"}"#
    }

    static let connectFailed = #"{"code":"upstreamConnectFailed","message":"connection refused"}"#

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 301: return "Moved Permanently"
        case 404: return "Not Found"
        case 500: return "Internal Server Error"
        default: return "Status"
        }
    }

    static func lines(_ records: [String]) -> String { records.map { $0 + "\n" }.joined() }

    /// The number in a record's id (`…-000042` → 42).
    static func number(ofLine line: [UInt8]) -> Int? {
        guard let record = try? JSONParser.parse(line), case .object(let members) = record,
              let id = members.first(where: { $0.key == "id" }), case .string(let text) = id.value,
              let dash = text.lastIndex(of: "-") else { return nil }
        return Int(text[text.index(after: dash)...])
    }
}
