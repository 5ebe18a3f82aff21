import CIsal
import CZlib
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// gzip for rotated logs, streaming in fixed chunks so a 64 MiB log never sits in memory whole.
/// Compression is ISA-L's deflate at level 1; reading (`decompress`) is zlib's inflate.
public enum Gzip {
    static let chunkSize = 128 * 1024

    /// Compresses `source` into `destination` (created or truncated, mode 0640) and fsyncs it,
    /// in one go on the calling thread (tests; the archiver steps a `GzipFileCompressor`).
    static func compressFile(_ source: String, to destination: String,
                             fileSystem: LogFileSystem) throws(LogIOError) {
        let compressor = try GzipFileCompressor(source, to: destination, fileSystem: fileSystem)
        while try !compressor.step() {}
        try compressor.sync()
    }

    /// Decompresses a whole gzip member (or several concatenated), for readers of rotated logs.
    /// Returns nil when the data is not complete, valid gzip.
    public static func decompress(_ data: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard inflateInit2_(&stream, 31, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
        defer { inflateEnd(&stream) }
        var result: [UInt8] = []
        let outBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
        defer { outBuffer.deallocate() }
        return data.withUnsafeBufferPointer { input -> [UInt8]? in
            guard let base = input.baseAddress, input.count > 0 else { return nil }
            var consumed = 0
            while consumed < input.count {
                stream.next_in = UnsafeMutablePointer(mutating: base + consumed)
                stream.avail_in = UInt32(input.count - consumed)
                var status: Int32 = Z_OK
                repeat {
                    stream.next_out = outBuffer
                    stream.avail_out = UInt32(chunkSize)
                    status = inflate(&stream, Z_NO_FLUSH)
                    guard status == Z_OK || status == Z_STREAM_END else { return nil }
                    result.append(contentsOf: UnsafeBufferPointer(start: outBuffer,
                                                                  count: chunkSize - Int(stream.avail_out)))
                } while status != Z_STREAM_END && (stream.avail_in > 0 || stream.avail_out == 0)
                guard status == Z_STREAM_END else { return nil }
                consumed = input.count - Int(stream.avail_in)
                if consumed < input.count && inflateReset(&stream) != Z_OK { return nil }
            }
            return result
        }
    }
}

/// One file's compression as a series of steps, so that the archiver can run each step on
/// whichever thread suits it (its idle-priority helper, or itself when behind); the stream's
/// state is plain memory and the descriptors belong to the process, so any one thread at a
/// time may go on with it.
///
/// ISA-L level 1 rather than zlib level 1: several times faster on JSON logs, with files
/// no larger. At zlib's speed, compressing the records of a busy proxy takes more CPU than
/// forwarding its traffic. The output is ordinary gzip (one member).
final class GzipFileCompressor {
    /// Input read per step: a few milliseconds of deflate, long enough that handing steps
    /// between threads costs next to nothing, short enough that a step left to an
    /// idle-priority thread ends soon.
    static let stepBytes = 4 << 20

    private let source: String
    private let destination: String
    private let fileSystem: LogFileSystem
    private let input: Int32
    private let output: Int32
    private var stream = isal_zstream()
    private let levelBuffer: UnsafeMutablePointer<UInt8>
    private let inBuffer: UnsafeMutablePointer<UInt8>
    private let outBuffer: UnsafeMutablePointer<UInt8>
    private var finished = false
    /// Set by the archiver when it gave up waiting for an idle-priority step: the step ends
    /// at its next chunk, and this compressor is dropped.
    private let cancelled = Atomic<Bool>(false)

    init(_ source: String, to destination: String, fileSystem: LogFileSystem) throws(LogIOError) {
        self.source = source
        self.destination = destination
        self.fileSystem = fileSystem
        input = try fileSystem.openRead(source)
        do {
            output = try fileSystem.openCreateTruncate(destination)
        } catch {
            close(input)
            throw error
        }
        isal_deflate_init(&stream)
        let levelBufferSize = Int(tapwire_isal_lvl1_buffer)
        levelBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: levelBufferSize)
        stream.level = 1
        stream.level_buf = levelBuffer
        stream.level_buf_size = UInt32(levelBufferSize)
        stream.gzip_flag = UInt16(tapwire_isal_gzip)
        inBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: Gzip.chunkSize)
        outBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: Gzip.chunkSize)
    }

    deinit {
        close(input)
        close(output)
        levelBuffer.deallocate()
        inBuffer.deallocate()
        outBuffer.deallocate()
    }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Compresses up to `stepBytes` more of the input; true once the whole gzip member is
    /// written (then `sync`). After `cancel`, returns false at the next chunk. Reads hit the
    /// page cache (the file was just written) and writes are buffered, so a step waits on
    /// no disk; the fsync is left to `sync` on the caller's thread, as a SCHED_IDLE thread
    /// also gets the idle I/O class.
    func step() throws(LogIOError) -> Bool {
        let chunkSize = Gzip.chunkSize
        var consumed = 0
        while !finished && consumed < Self.stepBytes {
            try fileSystem.check(.read, source)
            if cancelled.load(ordering: .relaxed) { return false }
            let count = read(input, inBuffer, chunkSize)
            if count < 0 {
                if errno == EINTR { continue }
                throw LogIOError(.read, source, code: errno)
            }
            consumed += count
            stream.next_in = inBuffer
            stream.avail_in = UInt32(count)
            stream.end_of_stream = count == 0 ? 1 : 0
            repeat {
                stream.next_out = outBuffer
                stream.avail_out = UInt32(chunkSize)
                guard isal_deflate(&stream) == COMP_OK else { throw LogIOError(.write, destination, code: EIO) }
                let produced = chunkSize - Int(stream.avail_out)
                var written = 0
                try fileSystem.writeAll(output, UnsafeRawBufferPointer(start: outBuffer, count: produced),
                                        path: destination, written: &written)
                if stream.internal_state.state.rawValue == UInt32(tapwire_isal_stream_end) { finished = true }
                // At the end of input, keep going until the trailer is out; a call that made
                // no progress there would loop forever, so it is an error instead.
                if count == 0 && !finished && produced == 0 { throw LogIOError(.write, destination, code: EIO) }
            } while !finished && (stream.avail_out == 0 || stream.avail_in > 0 || count == 0)
        }
        return finished
    }

    /// fsyncs the output, once `step` returned true.
    func sync() throws(LogIOError) {
        try fileSystem.sync(output, path: destination)
    }
}
