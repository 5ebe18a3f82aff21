import Foundation

/// What `tapwire query` prints for each record it keeps.
public enum QueryOutputForm: Sendable {
    /// One `tail` line.
    case formatted(TailFormatter)
    /// The record's line as stored.
    case json
    /// Nothing: only the number is wanted (`--count`).
    case countOnly
}

/// `tapwire query`'s options besides the expression.
public struct QueryScanOptions: Sendable {
    public var form: QueryOutputForm
    /// At most this many records (the first ones in the chosen order).
    public var limit: Int?
    /// Newest first.
    public var reverse: Bool
    /// Worker threads reading files side by side (one file each).
    public var threads: Int
    /// Bytes read and searched at a time.
    public var chunkSize: Int

    public static let defaultChunkSize = 1 << 20

    public init(form: QueryOutputForm, limit: Int? = nil, reverse: Bool = false,
                threads: Int = QueryScanOptions.defaultThreads, chunkSize: Int = QueryScanOptions.defaultChunkSize) {
        self.form = form
        self.limit = limit
        self.reverse = reverse
        self.threads = max(1, threads)
        self.chunkSize = max(4096, chunkSize)
    }

    /// One per core, at most 4: decompression and matching are CPU-bound, and more threads than
    /// cores only add switching.
    public static var defaultThreads: Int { min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)) }
}
