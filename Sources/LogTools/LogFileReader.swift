import CIsal
#if canImport(Glibc)
import Glibc
#endif

/// Why a log file could not be read. `description` names the file, so the CLI prints it as is.
public struct LogReadError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) { self.path = path; self.message = message }
    public var description: String { "\(path): \(message)" }

    static func errno(_ path: String, _ what: String, _ code: Int32) -> LogReadError {
        LogReadError(path: path, message: "\(what): " + String(cString: strerror(code)))
    }
}

/// Bytes of one log file, in chunks, so neither a 64 MiB plain file nor its .gz is ever held whole.
protocol LogFileReader: AnyObject {
    var path: String { get }
    /// Appends the next bytes to `buffer`; returns how many (0 at the current end of the file).
    func read(into buffer: inout [UInt8]) throws(LogReadError) -> Int
    func close()
}

let readChunkSize = 64 * 1024

/// A plain file. Reading past the end returns 0 and a later read sees bytes appended since, which is
/// how the active file is followed.
final class PlainFileReader: LogFileReader {
    let path: String
    let descriptor: Int32
    private var closed = false
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: readChunkSize)

    init(path: String) throws(LogReadError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LogReadError.errno(path, "cannot open", errno) }
        descriptor = fd
    }

    func read(into buffer: inout [UInt8]) throws(LogReadError) -> Int {
        while true {
            let n = Glibc.read(descriptor, scratch, readChunkSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw LogReadError.errno(path, "read failed", errno)
            }
            buffer.append(contentsOf: UnsafeBufferPointer(start: scratch, count: n))
            return n
        }
    }

    /// Identity and size of the open file, to tell rotation (a new inode at the active path) from
    /// truncation (same inode, smaller size).
    func status() -> (device: UInt64, inode: UInt64, size: Int64)? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino), Int64(info.st_size))
    }

    func currentOffset() -> Int64 { Int64(lseek(descriptor, 0, SEEK_CUR)) }

    func rewind() { lseek(descriptor, 0, SEEK_SET) }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
    }

    deinit {
        close()
        scratch.deallocate()
    }
}

/// A gzip file (one or several concatenated members), inflated chunk by chunk with ISA-L, whose
/// inflate runs about twice as fast as zlib's on record text (the archiver compresses with ISA-L
/// too); the gzip header and trailer (CRC-32, length) are parsed and checked by ISA-L.
final class GzipFileReader: LogFileReader {
    let path: String
    private let file: PlainFileReader
    /// ISA-L's state, ~90 KiB with its windows: allocated once, at a fixed address.
    private let state: UnsafeMutablePointer<inflate_state>
    private var input: [UInt8] = []
    private var inputOffset = 0
    private var finishedMember = false
    private var insideMember = false
    private var sawAnyMember = false
    private var atEnd = false
    static let outputChunkSize = 256 * 1024
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: GzipFileReader.outputChunkSize)

    init(path: String) throws(LogReadError) {
        self.path = path
        file = try PlainFileReader(path: path)
        state = UnsafeMutablePointer<inflate_state>.allocate(capacity: 1)
        isal_inflate_init(state)
        state.pointee.crc_flag = UInt32(ISAL_GZIP)
    }

    func read(into buffer: inout [UInt8]) throws(LogReadError) -> Int {
        while !atEnd {
            if inputOffset == input.count {
                input.removeAll(keepingCapacity: true)
                inputOffset = 0
                var got = 0
                // Read input in larger pieces than the plain reader's: fewer inflate calls.
                while got < 4 * readChunkSize {
                    let n = try file.read(into: &input)
                    if n == 0 { break }
                    got += n
                }
                if got == 0 {
                    atEnd = true
                    // A file that stops inside a member was cut short (crash during compression).
                    if insideMember { throw LogReadError(path: path, message: "truncated gzip data") }
                    if !sawAnyMember { throw LogReadError(path: path, message: "empty gzip file") }
                    return 0
                }
            }
            if finishedMember {
                // Another member follows the previous one's trailer.
                isal_inflate_reset(state)
                state.pointee.crc_flag = UInt32(ISAL_GZIP)
                finishedMember = false
            }
            sawAnyMember = true
            insideMember = true
            let produced = try inflateChunk(into: &buffer)
            if produced > 0 { return produced }
        }
        return 0
    }

    /// Inflates from the pending input into up to one chunk of output.
    private func inflateChunk(into buffer: inout [UInt8]) throws(LogReadError) -> Int {
        var status: Int32 = 0
        var consumed = 0
        var produced = 0
        let capacity = GzipFileReader.outputChunkSize
        input.withUnsafeMutableBufferPointer { inBytes in
            guard let inBase = inBytes.baseAddress else { return }
            let available = inBytes.count - inputOffset
            state.pointee.next_in = inBase + inputOffset
            state.pointee.avail_in = UInt32(available)
            state.pointee.next_out = scratch
            state.pointee.avail_out = UInt32(capacity)
            status = isal_inflate(state)
            consumed = available - Int(state.pointee.avail_in)
            produced = capacity - Int(state.pointee.avail_out)
            // The pointers must not outlive this closure's access to `input`.
            state.pointee.next_in = nil
            state.pointee.next_out = nil
        }
        buffer.append(contentsOf: UnsafeBufferPointer(start: scratch, count: produced))
        inputOffset += consumed
        guard status >= 0 else {
            throw LogReadError(path: path, message: status == ISAL_INCORRECT_CHECKSUM ? "gzip checksum mismatch" : "corrupt gzip data")
        }
        if state.pointee.block_state == ISAL_BLOCK_FINISH {
            finishedMember = true
            insideMember = false
        } else if consumed == 0 && produced == 0 && inputOffset < input.count {
            // Input left, room for output, and no progress: the data cannot be inflated.
            throw LogReadError(path: path, message: "corrupt gzip data")
        }
        return produced
    }

    func close() {
        file.close()
    }

    deinit {
        close()
        state.deallocate()
        scratch.deallocate()
    }
}
