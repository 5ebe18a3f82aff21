// libFuzzer target for ProtobufRawDecoder, compiled together with the decoder, the JSON
// value, parser and writer, Invariant.swift and JSONDepth.swift (see Fuzz/build.sh).
// Any broken invariant aborts.

func decode(_ bytes: UnsafeRawBufferPointer, depth: Int) -> Result<JSON, ProtobufError> {
    do throws(ProtobufError) { return .success(try ProtobufRawDecoder.decode(bytes, maxDepth: depth)) }
    catch { return .failure(error) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProtobuf(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    let limit = size % 3 == 0 ? 1 + size % 7 : ProtobufRawDecoder.defaultMaxDepth
    switch decode(input, depth: limit) {
    case .failure(let error):
        require(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside \(size) bytes")
        // A refusal does not depend on the luck of the nesting limit unless it names it.
        if !error.message.hasPrefix("nested deeper") && limit < ProtobufRawDecoder.defaultMaxDepth {
            if case .success = decode(input, depth: ProtobufRawDecoder.defaultMaxDepth) {
                violated("a higher limit accepted what a lower one refused for \(error)")
            }
        }
    case .success(let value):
        guard case .object(let fields) = value else { violated("a message decoded to something other than an object") }
        require(size == 0 || !fields.isEmpty, "\(size) bytes decoded to no field")
        // Each level of messages is an object, a fixed field one more: within twice the limit.
        let d = depth(value)
        require(d <= 2 * limit + 1, "depth \(d) past the limit \(limit)")
        // A higher limit accepts it too.
        if limit < ProtobufRawDecoder.defaultMaxDepth, case .failure(let e) = decode(input, depth: ProtobufRawDecoder.defaultMaxDepth) {
            violated("a higher limit refused what a lower one accepted: \(e)")
        }
        // The record's text is valid JSON that reads back as the same value, and writes the same again.
        var written: [UInt8] = []
        JSONWriter.write(value, into: &written)
        guard let parsed = try? JSONParser.parse(written) else {
            violated("written JSON does not parse: \(String(decoding: written, as: UTF8.self))")
        }
        require(parsed == value, "the written JSON read back differently")
        var again: [UInt8] = []
        JSONWriter.write(parsed, into: &again)
        require(again == written, "writing is not stable")
    }
    return 0
}
