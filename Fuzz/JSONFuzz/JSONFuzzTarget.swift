// libFuzzer target for JSONParser, JSONWriter and JSONCompactor, compiled together with
// JSON.swift, JSONParser.swift, JSONWriter.swift and JSONCompactor.swift and CJSONScan's
// header (see Fuzz/build.sh).
// Any broken invariant aborts.

func parse(_ bytes: UnsafeRawBufferPointer, fragments: Bool, depth: Int) -> Result<JSON, JSONParseError> {
    do throws(JSONParseError) { return .success(try JSONParser.parse(bytes, allowFragments: fragments, maxDepth: depth)) }
    catch { return .failure(error) }
}

func parse(_ bytes: [UInt8], fragments: Bool = true, depth: Int = 512) -> Result<JSON, JSONParseError> {
    bytes.withUnsafeBytes { parse($0, fragments: fragments, depth: depth) }
}

func write(_ value: JSON) -> [UInt8] {
    var out: [UInt8] = []
    JSONWriter.write(value, into: &out)
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    // A small limit for some inputs, so the depth check is reached without huge inputs.
    let limit = size % 7 == 0 ? 1 + size % 13 : 512
    let loose = parse(input, fragments: true, depth: limit)
    let strict = parse(input, fragments: false, depth: limit)
    checkCompactor(input, loose, limit: limit)
    checkScans(input)

    guard case .success(let value) = loose else {
        if case .failure(let error) = loose {
            require(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside \(size) bytes")
        }
        require((try? strict.get()) == nil, "accepted without fragments but refused with them")
        return 0
    }
    if case .success(let strictValue) = strict {
        require(strictValue == value, "fragment mode changes the value")
    } else {
        switch value {
        case .array, .object: violated("top-level container refused without fragments")
        default: break
        }
    }
    // Only valid UTF-8 can be accepted: outside strings the grammar is ASCII.
    require(String(validating: input, as: UTF8.self) != nil, "accepted invalid UTF-8")

    let d = depth(value)
    require(d <= limit, "depth \(d) above the limit \(limit)")
    if d > 0 {
        require((try? parse(input, fragments: true, depth: d).get()) == value, "refused at exactly its own depth")
        if case .success = parse(input, fragments: true, depth: d - 1) { violated("accepted above the depth limit") }
    }

    let written = write(value)
    switch parse(written, depth: max(d, 1)) {
    case .success(let again):
        require(again == value, "round trip changed the value")
        require(write(again) == written, "writing is not stable")
    case .failure(let error):
        violated("written form refused: \(error) in \(String(decoding: written, as: UTF8.self))")
    }
    return 0
}

/// The one-pass compactor never accepts what the parser refuses, and when it accepts,
/// writes what the tree path writes (with and without key redaction).
let redactedKeys = JSONKeySet(["a", "password", "Token"])

func checkCompactor(_ input: UnsafeRawBufferPointer, _ parsed: Result<JSON, JSONParseError>, limit: Int) {
    for keys in [JSONKeySet([]), redactedKeys] {
        var out: [UInt8] = [0x2A]
        let accepted = JSONCompactor.append(input, allowFragments: true, maxDepth: limit, redacting: keys, into: &out)
        switch parsed {
        case .failure:
            require(!accepted, "compactor accepted what the parser refuses")
            require(out == [0x2A], "a refusal changed the output")
        case .success(let value):
            guard accepted else { continue }  // allowed (the caller falls back), but only on odd input
            require(Array(out.dropFirst()) == write(keys.redacting(value)), "compactor and tree path differ")
        }
    }
}

/// The vectorised byte-class scans find what a byte-at-a-time loop finds, from every start
/// (the first few and a spread of others) to every end, so the sixteen-byte steps meet
/// their tails at every alignment.
func checkScans(_ input: UnsafeRawBufferPointer) {
    guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
    let n = input.count
    func reference(_ from: Int, _ end: Int, _ stops: (UInt8) -> Bool) -> Int {
        var i = from
        while i < end && !stops(base[i]) { i += 1 }
        return i
    }
    for start in Set((0..<min(n, 18)).map { $0 } + stride(from: 0, to: n, by: max(1, n / 16)).map { $0 }) {
        for end in [n, max(start, n - 1), min(n, start + 15), min(n, start + 16), min(n, start + 17)] {
            require(JSONCompactor.scanPlain(base, from: start, end: end)
                    == reference(start, end) { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 || $0 >= 0x80 },
                    "scanPlain from \(start) to \(end)")
            require(JSONCompactor.scanDigits(base, from: start, end: end) == reference(start, end) { $0 &- 0x30 >= 10 },
                    "scanDigits from \(start) to \(end)")
            require(JSONCompactor.scanWhitespace(base, from: start, end: end)
                    == reference(start, end) { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) },
                    "scanWhitespace from \(start) to \(end)")
        }
    }
}
