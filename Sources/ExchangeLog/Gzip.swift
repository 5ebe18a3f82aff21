import CZlib
#if canImport(Glibc)
import Glibc
#endif

/// gzip through zlib, streaming in fixed chunks so a 64 MiB log never sits in memory whole.
public enum Gzip {
    static let chunkSize = 128 * 1024

    /// Compresses `source` into `destination` (created or truncated, mode 0640) and fsyncs it.
    static func compressFile(_ source: String, to destination: String,
                             fileSystem: LogFileSystem) throws(LogIOError) {
        let input = try fileSystem.openRead(source)
        defer { close(input) }
        let output = try fileSystem.openCreateTruncate(destination)
        defer { close(output) }

        var stream = z_stream()
        // windowBits 31 = 15 + 16: a gzip header and trailer instead of a raw zlib stream.
        // Level 1: log lines repeat so much that the fastest level still shrinks them
        // ~10x, and it costs a third of the CPU of the default level while traffic runs.
        let initResult = deflateInit2_(&stream, Z_BEST_SPEED, Z_DEFLATED, 31, 8,
                                       Z_DEFAULT_STRATEGY, zlibVersion(),
                                       Int32(MemoryLayout<z_stream>.size))
        guard initResult == Z_OK else { throw LogIOError(.write, destination, code: ENOMEM) }
        defer { deflateEnd(&stream) }

        let inBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
        defer { outBuffer.deallocate() }

        var finished = false
        while !finished {
            try fileSystem.check(.read, source)
            let count = read(input, inBuffer, chunkSize)
            if count < 0 {
                if errno == EINTR { continue }
                throw LogIOError(.read, source, code: errno)
            }
            let flush = count == 0 ? Z_FINISH : Z_NO_FLUSH
            stream.next_in = inBuffer
            stream.avail_in = UInt32(count)
            repeat {
                stream.next_out = outBuffer
                stream.avail_out = UInt32(chunkSize)
                let result = deflate(&stream, flush)
                guard result != Z_STREAM_ERROR else { throw LogIOError(.write, destination, code: EIO) }
                let produced = chunkSize - Int(stream.avail_out)
                var written = 0
                try fileSystem.writeAll(output, UnsafeRawBufferPointer(start: outBuffer, count: produced),
                                        path: destination, written: &written)
                if result == Z_STREAM_END { finished = true }
            } while stream.avail_out == 0
        }
        try fileSystem.sync(output, path: destination)
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
