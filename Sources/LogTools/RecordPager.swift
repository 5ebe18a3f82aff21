import ExchangeLog
import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// Where a page of records newest first stopped, so the next page goes on with older ones,
/// across rotations: a plain file is named by its device and inode (a rotation renames the
/// active file, keeping both) and a byte offset, a line start; a `.gz` file by its name and how
/// many of its matches, counted from its end, were already returned. `lastID` is the id of the
/// last record returned: when the file is gone (compressed or deleted since), the next page
/// starts at the newest record older than it (ids sort by start time).
public struct RecordCursor: Equatable, Sendable {
    public var file: String
    public var device: UInt64
    public var inode: UInt64
    public var position: Int64
    public var lastID: String

    /// `file/device/inode/position/lastID`: file names and ids hold no `/`.
    public var text: String { "\(file)/\(device)/\(inode)/\(position)/\(lastID)" }

    public init?(text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, !parts[0].isEmpty, let device = UInt64(parts[1]), let inode = UInt64(parts[2]),
              let position = Int64(parts[3]), position >= 0 else { return nil }
        self.init(file: parts[0], device: device, inode: inode, position: position, lastID: parts[4])
    }

    public init(file: String, device: UInt64, inode: UInt64, position: Int64, lastID: String) {
        self.file = file; self.device = device; self.inode = inode; self.position = position; self.lastID = lastID
    }
}

/// One page of the records a query keeps, newest first (the viewer's list): the lines as stored
/// and the cursor for the next, older page (nil at the oldest record).
public struct RecordPage {
    public var lines: [[UInt8]]
    public var next: RecordCursor?
}

/// Reads pages newest first. Plain files are read backwards from the cursor in `chunkSize`
/// pieces, so a page costs about its own bytes however long the history; a `.gz` file cannot be
/// read backwards and is inflated whole for each page that reaches into it (rotated files are
/// bounded by `log.maxFileBytes`).
public enum RecordPager {
    /// The most records one page holds.
    public static let maxLimit = 5000

    public static func page(layout: LogFileLayout, query: Query, before cursor: RecordCursor?, limit: Int,
                            chunkSize: Int = QueryScanOptions.defaultChunkSize) throws -> RecordPage {
        try page(layout: layout, query: query, before: cursor, limit: limit, chunkSize: chunkSize, afterListing: {})
    }

    /// `afterListing` runs between listing the files and opening the rotated ones (tests
    /// compress a rotated file there, as the archiver may).
    static func page(layout: LogFileLayout, query: Query, before cursor: RecordCursor?, limit: Int,
                     chunkSize: Int, afterListing: () -> Void) throws -> RecordPage {
        let limit = max(1, min(limit, maxLimit))
        let snapshot = try LogSnapshot(layout: layout)
        afterListing()
        let scanner = SegmentScanner(query: query, form: .json, chunkSize: max(4096, chunkSize))
        var segments: [Segment] = []
        for segment in snapshot.segments.reversed() {
            switch segment {
            case .active(let reader, let size):
                let status = reader.status()
                segments.append(Segment(name: layout.fileName, reader: reader, size: size, isActive: true,
                                        device: status?.device ?? 0, inode: status?.inode ?? 0))
            case .rotated(let path):
                let name = String(path.split(separator: "/").last ?? "")
                if path.hasSuffix(".gz") {
                    segments.append(Segment(name: name, path: path))
                } else if let opened = try LogSnapshot.open(rotated: path) {
                    if let reader = opened as? PlainFileReader, let status = reader.status() {
                        segments.append(Segment(name: name, reader: reader, size: status.size, isActive: false,
                                                device: status.device, inode: status.inode))
                    } else {
                        // Compressed since the listing: its records are in the .gz now.
                        opened.close()
                        segments.append(Segment(name: name + ".gz", path: path + ".gz"))
                    }
                }
            }
        }
        defer { for segment in segments { segment.reader?.close() } }

        // Where to start, and whether records must be older than the cursor's id (its file is gone).
        var start = 0
        var position: Int64? = nil
        var olderThan: String? = nil
        if let cursor {
            if let i = segments.firstIndex(where: { $0.reader != nil && $0.device == cursor.device && $0.inode == cursor.inode }) {
                start = i
                position = min(cursor.position, segments[i].size)
            } else if let i = segments.firstIndex(where: { $0.reader == nil && $0.name == cursor.file }) {
                start = i
                position = cursor.position
            } else {
                olderThan = cursor.lastID
            }
        }

        var lines: [[UInt8]] = []
        var next: RecordCursor?
        for index in start..<segments.count where lines.count < limit {
            let segment = segments[index]
            let from = index == start ? position : nil
            let keep: ([UInt8]) -> Bool = { line in
                guard let olderThan else { return true }
                guard let id = RecordPager.id(of: line) else { return true }
                return id < olderThan
            }
            if let reader = segment.reader {
                var stoppedAt: Int64?
                try scanner.backward(reader, size: from ?? segment.size, isActive: segment.isActive, cancelled: { false }) { rendered, offset in
                    var line = rendered
                    if line.last == 10 { line.removeLast() }
                    guard keep(line) else { return true }
                    lines.append(line)
                    if lines.count == limit { stoppedAt = offset; return false }
                    return true
                }
                if let stoppedAt {
                    let lastID = RecordPager.id(of: lines[lines.count - 1]) ?? ""
                    next = stoppedAt > 0
                        ? RecordCursor(file: segment.name, device: segment.device, inode: segment.inode, position: stoppedAt, lastID: lastID)
                        : index + 1 < segments.count ? segments[index + 1].cursorAtEnd(lastID: lastID) : nil
                }
            } else if let path = segment.path, let reader = try LogSnapshot.open(rotated: path) {
                defer { reader.close() }
                // Matches newest first, counted from the file's end: a cursor's position counts
                // them all, also those an id fallback leaves out, so the next page skips as many.
                // Capped: the position comes from the request, and `skip + need` must not
                // overflow (a trap would stop the process). No file holds this many lines.
                let skip = Int(min(from ?? 0, Int64(Int32.max)))
                let need = limit - lines.count
                let trim = olderThan == nil
                var matches: [[UInt8]] = []
                try scanner.forward(reader, isActive: false, cancelled: { false }) { rendered in
                    var line = rendered
                    if line.last == 10 { line.removeLast() }
                    matches.append(line)
                    if trim && matches.count > 2 * (skip + need) + 64 { matches.removeFirst(matches.count - (skip + need + 1)) }
                    return true
                }
                let newestFirst = Array(matches.reversed())
                var i = skip
                var lastTaken: Int?
                while i < newestFirst.count && lines.count < limit {
                    if keep(newestFirst[i]) {
                        lines.append(newestFirst[i])
                        lastTaken = i
                    }
                    i += 1
                }
                if lines.count == limit, let lastTaken {
                    let lastID = RecordPager.id(of: lines[lines.count - 1]) ?? ""
                    if lastTaken + 1 < newestFirst.count {
                        next = RecordCursor(file: segment.name, device: 0, inode: 0, position: Int64(lastTaken + 1), lastID: lastID)
                    } else if index + 1 < segments.count {
                        next = segments[index + 1].cursorAtEnd(lastID: lastID)
                    }
                }
            }
        }
        return RecordPage(lines: lines, next: next)
    }

    /// The id a record line starts with (`{"id":"…"`), without parsing it.
    static func id(of line: [UInt8]) -> String? {
        let prefix = Array("{\"id\":\"".utf8)
        guard line.count > prefix.count, line.starts(with: prefix) else { return nil }
        guard let end = line[prefix.count...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: line[prefix.count..<end], as: UTF8.self)
    }

    private struct Segment {
        var name: String
        var reader: PlainFileReader?
        var path: String?
        var size: Int64 = 0
        var isActive = false
        var device: UInt64 = 0
        var inode: UInt64 = 0

        init(name: String, reader: PlainFileReader, size: Int64, isActive: Bool, device: UInt64, inode: UInt64) {
            self.name = name; self.reader = reader; self.size = size; self.isActive = isActive
            self.device = device; self.inode = inode
        }

        init(name: String, path: String) { self.name = name; self.path = path }

        /// A cursor before this file's newest record.
        func cursorAtEnd(lastID: String) -> RecordCursor {
            RecordCursor(file: name, device: device, inode: inode, position: reader == nil ? 0 : size, lastID: lastID)
        }
    }
}
