#if canImport(Glibc)
import Glibc
#endif

/// How often the active log file is rotated regardless of its size. Boundaries are UTC.
public enum RotateInterval: Sendable, Equatable {
    case never
    case hourly
    case daily
    case seconds(Int)

    /// Accepts the config file's spellings: "never", "hourly", "daily", or a number of seconds as text.
    public init?(configValue: String) {
        switch configValue {
        case "never": self = .never
        case "hourly": self = .hourly
        case "daily": self = .daily
        default:
            guard let seconds = Int(configValue), seconds > 0 else { return nil }
            self = .seconds(seconds)
        }
    }

    /// Length of one period in seconds, or nil when time never rotates the file.
    public var periodSeconds: Int? {
        switch self {
        case .never: return nil
        case .hourly: return 3600
        case .daily: return 86400
        case .seconds(let n): return n > 0 ? n : nil
        }
    }

    /// Index of the period containing `time`; two instants in the same period share an index.
    func period(containing time: Double) -> Int64? {
        guard let length = periodSeconds, time.isFinite else { return nil }
        return Int64((time / Double(length)).rounded(.down))
    }
}

/// What a full decode queue does to traffic (`log.whenBehind`).
public enum WhenBehind: String, Sendable, Equatable, CaseIterable {
    /// Traffic never waits: an exchange that finds the queue full is not logged, only
    /// counted, and the next loss record reports it.
    case drop
    /// Every exchange is logged: while the queue is full, clients' next requests are held
    /// (not read) until decoding catches up, and workers wait for room at the writer.
    /// A failing disk still drops records rather than holding traffic.
    case wait
}

/// The config file's `log` object, plus writer tuning that has sensible defaults.
public struct LogSettings: Sendable, Equatable {
    /// Relative paths resolve against the working directory when the file is opened.
    public var directory: String
    public var fileName: String
    /// A file is rotated before a write that would take it past this size (a single record larger
    /// than this still goes whole into an otherwise empty file).
    public var maxFileBytes: Int
    /// How many rotated files (plain or .gz) are kept; the oldest by name go first.
    public var maxFiles: Int
    public var rotateInterval: RotateInterval
    public var compress: Bool
    /// Records waiting for the writer thread; beyond this, `submit` refuses and counts a loss.
    public var queueCapacity: Int
    /// Bytes waiting for the writer thread; bounds memory when records are large.
    public var queueByteCapacity: Int
    /// Finished exchanges waiting to be decoded (`log.decodeQueueCapacity`).
    public var decodeQueueCapacity: Int
    /// Captured body bytes waiting to be decoded (`log.decodeQueueBytes`): a count alone
    /// would let 65,536 one-megabyte captures pile up.
    public var decodeQueueBytes: Int
    /// What happens when either decode bound is reached (`log.whenBehind`).
    public var whenBehind: WhenBehind
    /// Upper bound for one write() call; larger batches are split at line ends.
    public var batchBytes: Int
    /// `log.syncInterval`: seconds between fsyncs of the active file while records keep
    /// arriving; 0 (the default) never forces the active file to disk while running and
    /// leaves write-back to the kernel (within ~30 s), as nginx and squid do with their access
    /// logs. Closing the file (shutdown, reopen) and `flush` still fsync it. A rotated file is
    /// either gzipped, the `.gz` fsynced before the plain one is deleted (shutdown waits for
    /// that), or, with `compress` off, fsynced when it is rotated.
    public var syncInterval: Double

    public init(directory: String = "logs",
                fileName: String = "tapwire.jsonl",
                maxFileBytes: Int = 67_108_864,
                maxFiles: Int = 20,
                rotateInterval: RotateInterval = .daily,
                compress: Bool = true,
                queueCapacity: Int = 65_536,
                queueByteCapacity: Int = 268_435_456,
                decodeQueueCapacity: Int = 65_536,
                decodeQueueBytes: Int = 268_435_456,
                whenBehind: WhenBehind = .drop,
                batchBytes: Int = 1_048_576,
                syncInterval: Double = 0) {
        self.directory = directory
        self.fileName = fileName
        self.maxFileBytes = maxFileBytes
        self.maxFiles = maxFiles
        self.rotateInterval = rotateInterval
        self.compress = compress
        self.queueCapacity = queueCapacity
        self.queueByteCapacity = queueByteCapacity
        self.decodeQueueCapacity = decodeQueueCapacity
        self.decodeQueueBytes = decodeQueueBytes
        self.whenBehind = whenBehind
        self.batchBytes = batchBytes
        self.syncInterval = syncInterval
    }

    /// `directory` made absolute against the current working directory.
    public var resolvedDirectory: String {
        if directory.hasPrefix("/") { return LogSettings.trimmingTrailingSlashes(directory) }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return directory }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let relative = directory.hasPrefix("./") ? String(directory.dropFirst(2)) : directory
        if relative.isEmpty || relative == "." { return cwd }
        return LogSettings.trimmingTrailingSlashes(cwd == "/" ? "/" + relative : cwd + "/" + relative)
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
