/// One direction of a WebSocket connection, from byte chunks to whole messages: frames
/// parsed as they come (`WebSocketFrameParser`), fragments reassembled, permessage-deflate
/// undone with the context kept as negotiated, control frames counted, the first Close
/// kept. Memory is bounded whatever the stream: a message keeps at most `keepBytes` of its
/// payload, and inflating one message stops at `maxDecodedBytes`.
///
/// Rules (a broken one throws; the direction is not parsed further):
/// - A continuation frame only follows a data frame without FIN; a data frame does not
///   start while a message is open (control frames may come between fragments).
/// - RSV1 only on the first frame of a text or binary message, and only with
///   permessage-deflate negotiated.
/// - A Close payload is empty or a code of two bytes and a reason.
/// - A compressed message that inflates past `maxDecodedBytes` is cut there (`truncated`);
///   when the sender keeps its context, the following messages can no longer be inflated,
///   so parsing stops.
public struct WebSocketMessageParser {
    private var frames: WebSocketFrameParser
    private let assembler: Assembler

    public init(fromClient: Bool, deflate: PerMessageDeflate?, keepBytes: Int, maxDecodedBytes: Int) {
        frames = WebSocketFrameParser(fromClient: fromClient)
        assembler = Assembler(fromClient: fromClient, deflate: deflate, keepBytes: keepBytes, maxDecodedBytes: maxDecodedBytes)
    }

    /// Tests: the frame parser's unmask buffer kept between chunks.
    var unmaskBufferBytes: Int { frames.unmaskBufferBytes }

    /// Text and binary messages completed so far.
    public var messages: UInt64 { assembler.messageCount }
    public var pings: UInt64 { assembler.pings }
    public var pongs: UInt64 { assembler.pongs }
    /// The first Close frame this direction sent.
    public var close: WebSocketClose? { assembler.close }

    /// Parses the next chunk (only read), appending the messages it completes to
    /// `messages`, also those completed before an error in the same chunk.
    public mutating func parse(_ chunk: UnsafeRawBufferPointer, into messages: inout [WebSocketMessage]) throws {
        defer { assembler.moveCompleted(to: &messages) }
        try frames.parse(chunk, assembler)
    }

    /// The frame visitor: a class, so the frame parser can call it while it is itself mutated.
    final class Assembler: WebSocketFrameVisitor {
        let fromClient: Bool
        let deflate: PerMessageDeflate?
        let keepBytes: Int
        let maxDecodedBytes: Int
        private(set) var messageCount: UInt64 = 0
        private(set) var pings: UInt64 = 0
        private(set) var pongs: UInt64 = 0
        private(set) var close: WebSocketClose?
        private var completed: [WebSocketMessage] = []

        /// The open message (between its first frame and the frame with FIN).
        private var open: WebSocketMessage?
        /// The current frame is a control frame, its payload gathered here (≤ 125 bytes).
        private var control: WebSocketOpcode?
        private var controlPayload: [UInt8] = []
        /// The current data frame is the last of its message.
        private var finalFrame = false
        /// Inflating the open message stopped (at `maxDecodedBytes`, or after a final block): the rest is skipped.
        private var inflateStopped = false
        private var inflater: RawInflater?
        /// A message inflated past `maxDecodedBytes` while the sender keeps its context: the
        /// next compressed message cannot be inflated.
        private var contextLost = false
        /// The open message's deflate stream ended with a final block: the inflater started
        /// again keeping its window, which a sender with context takeover refers back into.
        private var endedByFinalBlock = false

        init(fromClient: Bool, deflate: PerMessageDeflate?, keepBytes: Int, maxDecodedBytes: Int) {
            self.fromClient = fromClient; self.deflate = deflate
            self.keepBytes = max(0, keepBytes); self.maxDecodedBytes = max(1, maxDecodedBytes)
        }

        func moveCompleted(to messages: inout [WebSocketMessage]) {
            guard !completed.isEmpty else { return }
            messages.append(contentsOf: completed)
            completed.removeAll(keepingCapacity: true)
        }

        func frameBegan(_ header: WebSocketFrameHeader) throws -> Bool {
            if header.opcode.isControl {
                if header.compressed { throw WebSocketParseError("a control frame with RSV1 set") }
                control = header.opcode
                controlPayload.removeAll(keepingCapacity: true)
                return true
            }
            control = nil
            finalFrame = header.fin
            switch header.opcode {
            case .continuation:
                guard open != nil else { throw WebSocketParseError("a continuation frame with no message to continue") }
                if header.compressed { throw WebSocketParseError("a continuation frame with RSV1 set") }
            default:
                if open != nil { throw WebSocketParseError("a new message before the previous one ended") }
                if header.compressed && deflate == nil {
                    throw WebSocketParseError("a frame with RSV1 set, and permessage-deflate was not negotiated")
                }
                if header.compressed && contextLost {
                    throw WebSocketParseError("a compressed message after one that inflated past \(maxDecodedBytes) bytes "
                                              + "(capture.maxDecodedBytes): with context takeover it cannot be inflated")
                }
                open = WebSocketMessage(opcode: header.opcode, payload: [], size: 0, truncated: false, compressed: header.compressed)
                inflateStopped = false
                if header.compressed && inflater == nil { inflater = try RawInflater() }
            }
            guard let message = open else { return false }
            // An uncompressed payload past what is kept is only counted, never unmasked.
            if !message.compressed {
                open?.size += header.length
                if message.payload.count >= keepBytes {
                    if header.length > 0 { open?.truncated = true }
                    return false
                }
                return true
            }
            return !inflateStopped
        }

        func payload(_ bytes: UnsafeRawBufferPointer) throws {
            if control != nil {
                controlPayload.append(contentsOf: bytes)
                return
            }
            guard let message = open else { return }
            if message.compressed {
                try inflate(bytes)
            } else {
                keep(bytes)
            }
        }

        private func keep(_ bytes: UnsafeRawBufferPointer) {
            guard var message = open else { return }
            open = nil  // moved out, so the append below does not copy the payload
            let room = keepBytes - message.payload.count
            if room > 0 { message.payload.append(contentsOf: bytes.prefix(room)) }
            if bytes.count > room { message.truncated = true }
            open = message
        }

        private func inflate(_ compressed: UnsafeRawBufferPointer) throws {
            guard let inflater, !inflateStopped else { return }
            let ended: Bool
            do {
                ended = try inflater.inflate(compressed) { out in
                guard var message = open else { return }
                open = nil
                message.size += UInt64(out.count)
                let room = keepBytes - message.payload.count
                if room > 0 { message.payload.append(contentsOf: out.prefix(room)) }
                if out.count > room { message.truncated = true }
                open = message
                if message.size > UInt64(maxDecodedBytes) {
                    throw Stop()
                }
                }
            } catch is Stop {
                open?.truncated = true
                inflateStopped = true
                // The sender's next messages refer to a context this side no longer has.
                if deflate?.takesOverContext(fromClient: fromClient) ?? false { contextLost = true }
                return
            }
            // A final deflate block ends this message's stream: the rest of it is not inflated.
            if ended { inflateStopped = true; endedByFinalBlock = true }
        }

        /// Thrown from inside the inflate callback when the message passes `maxDecodedBytes`.
        private struct Stop: Error {}

        func frameEnded() throws {
            if let control {
                self.control = nil
                try controlEnded(control)
                return
            }
            guard finalFrame, var message = open else { return }
            open = nil
            if message.compressed, let inflater, !inflateStopped {
                let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
                open = message
                try tail.withUnsafeBytes { try inflate($0) }
                message = open ?? message
                open = nil
                if !(deflate?.takesOverContext(fromClient: fromClient) ?? false) { inflater.reset() }
            } else if message.compressed, let inflater {
                // Cut short (its context is lost, and marked so), or ended by a final block,
                // after which the window is kept only for a sender that takes it over.
                if !(endedByFinalBlock && deflate?.takesOverContext(fromClient: fromClient) ?? false) { inflater.reset() }
            }
            inflateStopped = false
            endedByFinalBlock = false
            messageCount += 1
            completed.append(message)
        }

        private func controlEnded(_ opcode: WebSocketOpcode) throws {
            switch opcode {
            case .ping: pings += 1
            case .pong: pongs += 1
            case .close:
                guard close == nil else { return }
                if controlPayload.count == 1 { throw WebSocketParseError("a Close frame with a 1-byte payload") }
                if controlPayload.count >= 2 {
                    let code = UInt16(controlPayload[0]) << 8 | UInt16(controlPayload[1])
                    close = WebSocketClose(code: code, reason: String(decoding: controlPayload[2...], as: UTF8.self))
                } else {
                    close = WebSocketClose(code: nil, reason: nil)
                }
            default: break
            }
        }
    }
}
