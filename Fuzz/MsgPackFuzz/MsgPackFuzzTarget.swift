// libFuzzer target for MsgPackDecoder, compiled together with the MessagePack sources and
// JSON.swift, JSONParser.swift and JSONWriter.swift (see Fuzz/build.sh). Any broken
// invariant aborts; a crash or an ASan report is a failure in itself.

func decode(_ bytes: UnsafeRawBufferPointer, depth: Int) -> Result<JSON, MsgPackError> {
    do throws(MsgPackError) { return .success(try MsgPackDecoder.decode(bytes, maxDepth: depth)) }
    catch { return .failure(error) }
}

func decode(_ bytes: [UInt8], depth: Int) -> Result<JSON, MsgPackError> {
    bytes.withUnsafeBytes { decode($0, depth: depth) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMsgPack(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    // A small limit for some inputs, so the depth check is reached without huge inputs.
    let limit = size % 5 == 0 ? 1 + size % 11 : MsgPackDecoder.defaultMaxDepth
    let result = decode(input, depth: limit)
    guard case .success(let value) = result else {
        if case .failure(let error) = result {
            require(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside \(size) bytes")
        }
        return 0
    }
    // A MessagePack value is self-delimiting: no proper prefix is a whole value, and a byte
    // after it is reported where it starts.
    if size > 0 {
        if case .success = decode(UnsafeRawBufferPointer(rebasing: input[0..<(size - 1)]), depth: limit) {
            violated("a proper prefix decoded too")
        }
    }
    if case .failure(let error) = decode(Array(input) + [0xC0], depth: limit) {
        require(error.offset == size, "trailing byte reported at \(error.offset), not \(size)")
    } else {
        violated("a trailing byte was accepted")
    }

    // bin and ext become one-member objects, one level deeper than their place (a key is
    // written as text, so it may hide nesting, never add it).
    let d = depth(value)
    require(d <= limit + 1, "depth \(d) above the limit \(limit) + 1")
    // A higher limit accepts what a lower one did, with the same value.
    if limit < MsgPackDecoder.defaultMaxDepth {
        require((try? decode(input, depth: MsgPackDecoder.defaultMaxDepth).get()) == value, "a higher limit changed the result")
    }

    // The record's text: valid JSON (the strict parser, no fragments refused at top level
    // matter here) that reads back as the same value, and writes the same again.
    var written: [UInt8] = []
    JSONWriter.write(value, into: &written)
    require(String(validating: written, as: UTF8.self) != nil, "output is not UTF-8")
    do throws(JSONParseError) {
        let again = try JSONParser.parse(written, allowFragments: true, maxDepth: max(d, 1))
        require(again == value, "JSON round trip changed the value")
        var rewritten: [UInt8] = []
        JSONWriter.write(again, into: &rewritten)
        require(rewritten == written, "writing is not stable")
    } catch {
        violated("output is not JSON: \(error) in \(String(decoding: written, as: UTF8.self))")
    }
    return 0
}
