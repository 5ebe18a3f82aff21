@testable import ExchangeLog
import Foundation
import HTTP1
import ResponseSerialization
import WebSocket
import XCTest

/// Pieces of an upgraded connection through the pipeline: `wsMessage` records as messages
/// complete, in order whatever order the workers take the pieces, and the connection's record.
final class WebSocketRecorderTests: XCTestCase {
    static func frame(_ opcode: UInt8, _ payload: [UInt8], masked: Bool) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        precondition(payload.count < 126 || payload.count <= 0xFFFF)
        let bit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 { out.append(bit | UInt8(payload.count)) } else {
            out += [bit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        guard masked else { return out + payload }
        let mask: [UInt8] = [9, 8, 7, 6]
        return out + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    static func upgrade(path: String = "/chat", extensions: String? = nil) -> CapturedExchange {
        var headers = [("Upgrade", "websocket"), ("Connection", "Upgrade")]
        if let extensions { headers.append(("Sec-WebSocket-Extensions", extensions)) }
        return RecordFixture.exchange(url: "http://chat.local\(path)", requestHeaders: [("Host", "chat.local")],
                                      status: 101, reason: "Switching Protocols", responseHeaders: headers)
    }

    func run(_ settings: ProcessorSettings = ProcessorSettings(), workers: Int = 2,
             _ feed: (ExchangePipeline, WebSocketCapture) -> Void) throws -> [[String: Any]] {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false))
        let pipeline = ExchangePipeline(processor: RecordFixture.processor(settings), writer: writer, workers: workers)
        let capture = WebSocketCapture(upgrade: Self.upgrade())
        feed(pipeline, capture)
        pipeline.drain()
        writer.flushAndStop()
        return try LogTestFiles.lines(dir.path + "/tapwire.jsonl").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static func piece(_ capture: WebSocketCapture, _ sequence: UInt64, _ direction: WebSocketDirection, _ bytes: [UInt8]) -> CapturedEvent {
        .webSocket(CapturedWebSocketPiece(capture: capture, sequence: sequence,
                                          content: .bytes(direction, bytes, time: RecordFixture.t0 + Double(sequence))))
    }

    static func end(_ capture: WebSocketCapture, _ sequence: UInt64) -> CapturedEvent {
        .webSocket(CapturedWebSocketPiece(capture: capture, sequence: sequence, content: .end(CapturedTunnel(
            kind: .websocket, client: "127.0.0.1:1", target: "http://chat.local/chat", status: 101, bytesFromClient: 1,
            bytesFromUpstream: 1, start: RecordFixture.t0, end: RecordFixture.t0 + 9, closedBy: .client, upgrade: capture.upgrade))))
    }

    func testPiecesTakenOutOfOrderGiveMessagesInOrderAndTheRecordLast() throws {
        let message = Self.frame(1, Array(#"{"n":1,"password":"hunter2"}"#.utf8), masked: true)
        let records = try run(ProcessorSettings(redactJSONKeys: ["password"])) { pipeline, capture in
            // The first message split across two pieces, accepted after the later ones.
            pipeline.accept(Self.end(capture, 4))
            pipeline.accept(Self.piece(capture, 3, .client, Self.frame(8, [0x03, 0xE8] + Array("bye".utf8), masked: true)))
            pipeline.accept(Self.piece(capture, 2, .server, Self.frame(2, [1, 2, 3], masked: false) + Self.frame(10, [], masked: false)))
            pipeline.accept(Self.piece(capture, 1, .client, Array(message[5...])))
            pipeline.accept(Self.piece(capture, 0, .client, Array(message[..<5])))
        }
        let kinds = records.map { $0["kind"] as? String }
        XCTAssertEqual(kinds, ["wsMessage", "wsMessage", "websocket"])
        let connection = try XCTUnwrap(records.last?["id"] as? String)
        XCTAssertEqual(records[0]["connection"] as? String, connection)
        XCTAssertEqual(records[0]["direction"] as? String, "client")
        XCTAssertEqual(records[0]["opcode"] as? String, "text")
        XCTAssertEqual(records[0]["size"] as? Int, 28)
        let value = try XCTUnwrap((records[0]["result"] as? [String: Any])?["success"] as? [String: Any])
        XCTAssertEqual(value["password"] as? String, "[redacted]", "redacted as bodies are")
        XCTAssertEqual(records[1]["direction"] as? String, "server")
        XCTAssertEqual((records[1]["result"] as? [String: Any])?["success"] as? [String: Int], ["size": 3])
        let ws = try XCTUnwrap(records.last)
        XCTAssertEqual(ws["messagesFromClient"] as? Int, 1)
        XCTAssertEqual(ws["messagesFromUpstream"] as? Int, 1)
        XCTAssertEqual(ws["pongsFromUpstream"] as? Int, 1)
        XCTAssertEqual(ws["closeCode"] as? Int, 1000)
        XCTAssertEqual(ws["closeReason"] as? String, "bye")
        XCTAssertEqual(ws["closeFrom"] as? String, "client")
        XCTAssertTrue(ws["frameError"] is NSNull)
    }

    func testARuleChoosesTheSerializerAndLargeMessagesAreCut() throws {
        var msgpack = RuleMatch()
        msgpack.websocket = true
        msgpack.path = Glob("/chat")
        let rule = Rule(name: "chat-msgpack", match: msgpack, serializer: SerializerSpec(kind: .msgpack))
        let records = try run(ProcessorSettings(rules: [rule], messageKeepBytes: 16)) { pipeline, capture in
            pipeline.accept(Self.piece(capture, 0, .server, Self.frame(2, [0x81, 0xA1, 0x61, 0x01], masked: false)))
            pipeline.accept(Self.piece(capture, 1, .server, Self.frame(2, [UInt8](repeating: 0xC0, count: 40), masked: false)))
            pipeline.accept(Self.end(capture, 2))
        }
        XCTAssertEqual((records[0]["result"] as? [String: Any])?["success"] as? [String: Int], ["a": 1])
        XCTAssertEqual(records[1]["size"] as? Int, 40)
        let failure = try XCTUnwrap((records[1]["result"] as? [String: Any])?["failure"] as? [String: Any])
        XCTAssertEqual(failure["reason"] as? String, "inputDataTruncated", "cut at capture.maxBodyBytes, as a body")
    }

    func testTextThatIsNotJSONIsAStringAndAMalformedFrameStopsParsing() throws {
        let records = try run { pipeline, capture in
            pipeline.accept(Self.piece(capture, 0, .server, Self.frame(1, Array("just words".utf8), masked: false)))
            pipeline.accept(Self.piece(capture, 1, .server, [0x83, 0x00] + Self.frame(1, Array("after".utf8), masked: false)))
            pipeline.accept(Self.piece(capture, 2, .client, Self.frame(1, Array("ignored".utf8), masked: true)))
            pipeline.accept(Self.end(capture, 3))
        }
        XCTAssertEqual(records.count, 2)
        XCTAssertEqual((records[0]["result"] as? [String: Any])?["success"] as? String, "just words")
        XCTAssertEqual(records[1]["frameError"] as? String, "server: a frame with the reserved opcode 3")
        XCTAssertEqual(records[1]["messagesFromUpstream"] as? Int, 1)
    }

    func testALostPieceStopsParsingButNotTheRecord() throws {
        let capture = WebSocketCapture(upgrade: Self.upgrade())
        let processor = RecordFixture.processor()
        let ids = RecordIDGenerator()
        var state: AnyObject?
        let recorder = WebSocketRecorder.of(capture, in: &state, processor: processor, ids: ids)
        var buffer = RecordBuffer(capacity: 4096), ends: [Int] = [], scratch: [UInt8] = []
        func take(_ event: CapturedEvent) {
            guard case .webSocket(let piece) = event else { return }
            recorder.take(piece, processor: processor, ids: ids, into: &buffer, ends: &ends, scratch: &scratch)
        }
        capture.noteRefused(1)
        XCTAssertFalse(capture.isParsing, "the engine stops copying at once, before the pieces ahead of it are parsed")
        take(Self.piece(capture, 2, .server, Self.frame(1, Array("late".utf8), masked: false)))
        XCTAssertTrue(ends.isEmpty, "waits for 0")
        take(Self.piece(capture, 0, .server, Self.frame(1, Array("early".utf8), masked: false)))
        take(Self.end(capture, 3))
        XCTAssertEqual(ends.count, 2, "the first message and the record")
        let text = String(decoding: buffer.bytes, as: UTF8.self)
        XCTAssertTrue(text.contains(#""frameError":"bytes were not parsed: the decode queue was full"#), text)
        XCTAssertFalse(text.contains("late"), text)
    }

    /// The event loop notes a refused piece without the connection's lock, which a worker
    /// holds while it parses (a piece of compressed messages can take a long time).
    func testARefusedPieceIsNotedWithoutWaitingForAWorker() {
        let capture = WebSocketCapture(upgrade: Self.upgrade())
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread {
            capture.state.withLock { _ in
                held.signal()
                _ = release.wait(timeout: .now() + 10)
            }
        }.start()
        held.wait()
        let started = Date()
        capture.noteRefused(7)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "noted while a worker holds the connection")
        release.signal()
        XCTAssertFalse(capture.isParsing)
        XCTAssertEqual(capture.takeRefused(), [7])
        XCTAssertEqual(capture.takeRefused(), [])
    }

    /// The compact path for JSON text without a rule gives what the full one does.
    func testTheCompactPathForJSONTextIsTheFullOne() {
        let fast = RecordFixture.processor(ProcessorSettings(redactJSONKeys: ["token"]))
        var full = fast
        full.compactFastPath = false
        let texts = [#"{"a": 1, "token": "x"}"#, #"  [1, 2.50]  "#, "not json", "", #"{"cut": tr"#, "7"]
        for (i, text) in texts.enumerated() {
            let bytes = Array(text.utf8)
            let cut = i == 4
            let message = WebSocketMessage(opcode: .text, payload: bytes, size: UInt64(bytes.count) + (cut ? 10 : 0),
                                           truncated: cut, compressed: false)
            var scratch: [UInt8] = []
            let a = fast.messageResult(message, upgrade: Self.upgrade(), rule: nil, scratch: &scratch)
            let b = full.messageResult(message, upgrade: Self.upgrade(), rule: nil, scratch: &scratch)
            XCTAssertEqual(a, b, text)
        }
    }
}
