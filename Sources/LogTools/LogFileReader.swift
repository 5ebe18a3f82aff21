import CZlib
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

/// A gzip file (one or several concatenated members), inflated chunk by chunk.
final class GzipFileReader: LogFileReader {
    let path: String
    private let file: PlainFileReader
    private var stream = z_stream()
    private var input: [UInt8] = []
    private var inputOffset = 0
    private var streamReady = false
    private var finishedMember = false
    private var sawAnyMember = false
    private var atEnd = false
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: readChunkSize)

    init(path: String) throws(LogReadError) {
        self.path = path
        file = try PlainFileReader(path: path)
        // windowBits 31 = 15 + 16: expect a gzip header and trailer.
        guard inflateInit2_(&stream, 31, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw LogReadError(path: path, message: "cannot start gzip decompression")
        }
        streamReady = true
    }

    func read(into buffer: inout [UInt8]) throws(LogReadError) -> Int {
        while !atEnd {
            if inputOffset == input.count {
                input.removeAll(keepingCapacity: true)
                inputOffset = 0
                if try file.read(into: &input) == 0 {
                    atEnd = true
                    // A file that stops inside a member was cut short (crash during compression).
                    if sawAnyMember && !finishedMember {
                        throw LogReadError(path: path, message: "truncated gzip data")
                    }
                    if !sawAnyMember { throw LogReadError(path: path, message: "empty gzip file") }
                    return 0
                }
            }
            if finishedMember {
                // Another member follows the previous one's trailer.
                guard inflateReset(&stream) == Z_OK else {
                    throw LogReadError(path: path, message: "cannot restart gzip decompression")
                }
                finishedMember = false
            }
            sawAnyMember = true
            let produced = try inflateChunk(into: &buffer)
            if produced > 0 { return produced }
        }
        return 0
    }

    /// Inflates from the pending input into up to one chunk of output.
    private func inflateChunk(into buffer: inout [UInt8]) throws(LogReadError) -> Int {
        var status: Int32 = Z_OK
        var consumed = 0
        var produced = 0
        input.withUnsafeMutableBufferPointer { inBytes in
            guard let inBase = inBytes.baseAddress else {
                status = Z_BUF_ERROR
                return
            }
            let available = inBytes.count - inputOffset
            stream.next_in = inBase + inputOffset
            stream.avail_in = UInt32(available)
            stream.next_out = scratch
            stream.avail_out = UInt32(readChunkSize)
            status = inflate(&stream, Z_NO_FLUSH)
            consumed = available - Int(stream.avail_in)
            produced = readChunkSize - Int(stream.avail_out)
            // The pointers must not outlive this closure's access to `input`.
            stream.next_in = nil
            stream.next_out = nil
        }
        buffer.append(contentsOf: UnsafeBufferPointer(start: scratch, count: produced))
        inputOffset += consumed
        switch status {
        case Z_STREAM_END:
            finishedMember = true
        case Z_OK:
            break
        case Z_BUF_ERROR where consumed == 0 && produced == 0:
            break   // needs more input; the caller reads the file on
        default:
            throw LogReadError(path: path, message: "corrupt gzip data")
        }
        return produced
    }

    func close() {
        if streamReady {
            inflateEnd(&stream)
            streamReady = false
        }
        file.close()
    }

    deinit {
        close()
        scratch.deallocate()
    }
}
