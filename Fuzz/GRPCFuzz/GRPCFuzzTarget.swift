// libFuzzer target for GRPCMessages, compiled with Invariant.swift (see Fuzz/build.sh).
// Any broken invariant aborts.

func split(_ bytes: UnsafeRawBufferPointer) -> Result<GRPCMessages, GRPCFramingError> {
    do throws(GRPCFramingError) { return .success(try GRPCMessages.split(bytes)) }
    catch { return .failure(error) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGRPC(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    switch split(input) {
    case .failure(let error):
        require(error.offset >= 0 && error.offset + 5 <= size, "error offset \(error.offset) outside \(size) bytes")
        require(input[error.offset] > 1, "refused a prefix whose flag is \(input[error.offset])")
    case .success(let whole):
        // The messages tile the body from 0, each after its 5-byte prefix; the cut, if any,
        // starts where they stop and the bytes after it are fewer than it declared.
        var next = 0
        var rebuilt: [UInt8] = []
        for m in whole.messages {
            require(m.offset == next, "message at \(m.offset), expected \(next)")
            require(m.payload.lowerBound == m.offset + 5 && m.payload.upperBound <= size, "payload \(m.payload) misplaced")
            rebuilt.append(m.compressed ? 1 : 0)
            let n = m.payload.count
            rebuilt += [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            rebuilt += input[m.payload]
            next = m.payload.upperBound
        }
        require(rebuilt.elementsEqual(input[0..<next]), "the messages do not re-encode to the body")
        if let cut = whole.cutShort {
            require(cut.offset == next && cut.offset < size, "cut at \(cut.offset), messages end at \(next)")
            if let declared = cut.declaredLength { require(size - cut.offset - 5 < declared, "a whole message reported cut") }
            else { require(size - cut.offset < 5, "a whole prefix reported cut") }
        } else {
            require(next == size, "bytes after the last message, and no cut")
        }
        // A prefix of the body splits into a prefix of the messages.
        if size > 0, case .success(let shorter) = split(UnsafeRawBufferPointer(rebasing: input[0..<(size - 1)])) {
            require(shorter.messages.count <= whole.messages.count
                    && zip(shorter.messages, whole.messages).allSatisfy { $0 == $1 }, "a prefix split differently")
        }
    }
    return 0
}
