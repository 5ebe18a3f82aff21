import Foundation
import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// Reads one file of a log and hands over the records a query keeps, rendered for output.
///
/// Files are read in `chunkSize` pieces; within a piece the prefilter finds the lines worth
/// parsing (most are never split out, let alone parsed). Forward, a piece is searched as it
/// comes; backward (plain files, for `--reverse`) pieces are read from the end with `pread`
/// and each piece's matches are handed over last first.
struct SegmentScanner {
    let query: Query
    let form: QueryOutputForm
    let chunkSize: Int

    /// The rendered record (empty for `countOnly`), or nil when the line does not match.
    func evaluate(_ raw: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var line = raw
        if let last = line.last, last == 13 { line = UnsafeBufferPointer(rebasing: line.dropLast()) }
        if line.isEmpty { return nil }
        // Even the empty query parses each line: one that is not a JSON object is no record.
        guard query.prefilter.mayMatch(line),
              let record = try? JSONParser.parse(UnsafeRawBufferPointer(line), allowFragments: false),
              query.matches(record) else { return nil }
        switch form {
        case .countOnly: return []
        case .json: return Array(line) + [10]
        case .formatted(let formatter): return Array(formatter.format(record).utf8) + [10]
        }
    }

    /// Every match in `region`, in order, to `emit` (false: stop). Returns false when stopped.
    func search(_ region: UnsafeBufferPointer<UInt8>, emit: ([UInt8]) -> Bool) -> Bool {
        search(region) { rendered, _ in emit(rendered) }
    }

    /// The same, with the index in `region` where each matching line starts.
    func search(_ region: UnsafeBufferPointer<UInt8>, emit: ([UInt8], Int) -> Bool) -> Bool {
        var going = true
        query.prefilter.forEachCandidate(in: region) { range in
            guard let rendered = evaluate(UnsafeBufferPointer(rebasing: region[range])) else { return true }
            going = emit(rendered, range.lowerBound)
            return going
        }
        return going
    }

    /// Reads `reader` to its end, or its first `byteLimit` bytes. The active file's last line
    /// without `\n` is still being written and is left out; a rotated file's is a record.
    func forward(_ reader: LogFileReader, isActive: Bool, byteLimit: Int64? = nil, cancelled: () -> Bool,
                 emit: ([UInt8]) -> Bool) throws(LogReadError) {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(chunkSize + readChunkSize)
        var unread = byteLimit ?? Int64.max
        while true {
            var atEnd = false
            // At least one read per round: a line longer than a chunk grows the buffer until
            // its newline arrives.
            repeat {
                let n = try reader.read(into: &buffer)
                if n == 0 { atEnd = true; break }
                unread -= Int64(n)
                if unread <= 0 {
                    buffer.removeLast(Int(-unread))
                    atEnd = true
                    break
                }
            } while buffer.count < chunkSize
            let complete = buffer.withUnsafeBufferPointer { bytes -> Int in
                var i = bytes.count
                while i > 0 && bytes[i - 1] != 10 { i -= 1 }
                return i
            }
            let stopped = buffer.withUnsafeBufferPointer { bytes -> Bool in
                var end = complete
                if atEnd && !isActive { end = bytes.count }
                return !search(UnsafeBufferPointer(rebasing: bytes[0..<end]), emit: emit)
            }
            if stopped || atEnd || cancelled() { return }
            buffer.removeFirst(complete)
        }
    }

    /// Reads a plain file from `size` back to its start, handing over matches newest first.
    func backward(_ reader: PlainFileReader, size: Int64, isActive: Bool, cancelled: () -> Bool,
                  emit: ([UInt8]) -> Bool) throws(LogReadError) {
        try backward(reader, size: size, isActive: isActive, cancelled: cancelled) { rendered, _ in emit(rendered) }
    }

    /// The same, with the file offset where each matching line starts (the viewer's cursor).
    /// `size` must be 0, the file's size or a line start.
    func backward(_ reader: PlainFileReader, size: Int64, isActive: Bool, cancelled: () -> Bool,
                  emit: ([UInt8], Int64) -> Bool) throws(LogReadError) {
        var end = size
        // The start of a line whose beginning is in the part not read yet, with its newline.
        var carry: [UInt8] = []
        var first = true
        while end > 0 || !carry.isEmpty {
            let start = max(0, end - Int64(chunkSize))
            var buffer = [UInt8](repeating: 0, count: Int(end - start))
            var filled = 0
            while filled < buffer.count {
                let n = buffer.withUnsafeMutableBytes { raw in
                    pread(reader.descriptor, raw.baseAddress! + filled, raw.count - filled, off_t(start) + off_t(filled))
                }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw LogReadError.errno(reader.path, "read failed", errno)
                }
                if n == 0 { break }
                filled += n
            }
            buffer.removeLast(buffer.count - filled)
            buffer += carry
            var regionEnd = buffer.count
            if first {
                first = false
                // The active file's bytes after its last newline are a line still being written.
                if isActive {
                    while regionEnd > 0 && buffer[regionEnd - 1] != 10 { regionEnd -= 1 }
                }
            }
            var regionStart = 0
            if start > 0 {
                guard let newline = buffer[0..<regionEnd].firstIndex(of: 10) else {
                    carry = Array(buffer[0..<regionEnd])
                    end = start
                    continue
                }
                regionStart = newline + 1
                carry = Array(buffer[0..<regionStart])
            } else {
                carry = []
            }
            var matches: [([UInt8], Int64)] = []
            buffer.withUnsafeBufferPointer { bytes in
                _ = search(UnsafeBufferPointer(rebasing: bytes[regionStart..<regionEnd])) { rendered, index in
                    matches.append((rendered, start + Int64(regionStart + index)))
                    return true
                }
            }
            for (rendered, offset) in matches.reversed() where !emit(rendered, offset) { return }
            end = start
            if cancelled() { return }
            if start == 0 { break }
        }
    }
}
