// libFuzzer target for WebSocketMessageParser (and so WebSocketFrameParser and the
// permessage-deflate inflater), compiled together with Sources/WebSocket (see Fuzz/build.sh).
// The first byte picks the direction, permessage-deflate and the chunk size; the rest is the
// byte stream. Any broken invariant aborts; a crash or an ASan report is a failure in itself.

/// Parses `stream` in chunks of `chunk` bytes; the messages and the error, if any.
func run(_ stream: [UInt8], fromClient: Bool, deflate: PerMessageDeflate?, chunk: Int, keep: Int,
         maxDecoded: Int) -> (messages: [WebSocketMessage], failed: Bool, parser: WebSocketMessageParser) {
    var parser = WebSocketMessageParser(fromClient: fromClient, deflate: deflate, keepBytes: keep, maxDecodedBytes: maxDecoded)
    var messages: [WebSocketMessage] = []
    var i = 0
    while i < stream.count {
        let piece = Array(stream[i..<min(stream.count, i + chunk)])
        i += piece.count
        do {
            try piece.withUnsafeBytes { try parser.parse($0, into: &messages) }
        } catch let error as WebSocketParseError {
            require(!error.message.isEmpty, "an error without a reason")
            return (messages, true, parser)
        } catch {
            violated("an error of another type: \(error)")
        }
    }
    return (messages, false, parser)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let options = data[0]
    let stream = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let fromClient = options & 1 != 0
    let deflate: PerMessageDeflate? = options & 2 == 0 ? nil
        : PerMessageDeflate(serverNoContextTakeover: options & 4 != 0, clientNoContextTakeover: options & 8 != 0)
    let chunk = [1, 2, 3, 7, 64, 4096][Int(options >> 4) % 6]
    let keep = 64, maxDecoded = 1 << 16

    let pieces = run(stream, fromClient: fromClient, deflate: deflate, chunk: chunk, keep: keep, maxDecoded: maxDecoded)
    for m in pieces.messages {
        require(m.opcode == .text || m.opcode == .binary, "a message of opcode \(m.opcode)")
        require(m.payload.count <= keep, "kept \(m.payload.count) bytes past keepBytes")
        require(UInt64(m.payload.count) <= m.size, "kept more than the size")
        require(m.truncated || UInt64(m.payload.count) == m.size, "an untruncated message whose size is not its payload")
        require(m.compressed || m.size <= UInt64(stream.count), "an uncompressed message larger than the stream")
    }
    require(pieces.parser.messages == UInt64(pieces.messages.count), "the count is not the messages returned")
    // Chunking never changes the result.
    let whole = run(stream, fromClient: fromClient, deflate: deflate, chunk: max(1, stream.count), keep: keep, maxDecoded: maxDecoded)
    require(whole.failed == pieces.failed, "chunks of \(chunk) \(pieces.failed ? "failed" : "passed"), whole did not")
    require(whole.messages == pieces.messages, "chunks of \(chunk) gave other messages than the whole stream")
    require(whole.parser.close == pieces.parser.close && whole.parser.pings == pieces.parser.pings, "control frames differ by chunking")
    return 0
}
