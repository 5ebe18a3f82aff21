/// Where the active and rotated files of one log live and how rotated names are spelled:
/// `tapwire.jsonl` rotates to `tapwire-20261202T101112.jsonl` (then `-1`, `-2` on a clash),
/// compressed to `tapwire-20261202T101112.jsonl.gz`. Readers (`tail`, `har`) use it to find files.
public struct LogFileLayout: Sendable, Equatable {
    public let directory: String
    public let fileName: String
    let stem: String
    let fileExtension: String

    public init(directory: String, fileName: String) {
        self.directory = directory
        self.fileName = fileName
        if let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex {
            stem = String(fileName[..<dot])
            fileExtension = String(fileName[dot...])
        } else {
            stem = fileName
            fileExtension = ""
        }
    }

    public init(settings: LogSettings) {
        self.init(directory: settings.resolvedDirectory, fileName: settings.fileName)
    }

    public var activePath: String { directory + "/" + fileName }

    func rotatedName(stamp: String, suffix: Int) -> String {
        suffix == 0 ? "\(stem)-\(stamp)\(fileExtension)" : "\(stem)-\(stamp)-\(suffix)\(fileExtension)"
    }

    /// One rotated file as found on disk.
    public struct RotatedFile: Sendable, Equatable {
        public var name: String
        public var stamp: String
        public var suffix: Int
        public var compressed: Bool
        /// A `.gz.tmp` left by an interrupted compression.
        public var temporary: Bool

        /// The name without `.gz` / `.gz.tmp`: the plain rotated file this entry stands for.
        public var baseName: String {
            if temporary { return String(name.dropLast(7)) }
            if compressed { return String(name.dropLast(3)) }
            return name
        }
    }

    /// Recognises only names this layout produces, so unrelated files in the directory are left alone.
    public func parseRotated(_ name: String) -> RotatedFile? {
        var rest = Substring(name)
        guard rest.hasPrefix(stem + "-") else { return nil }
        rest = rest.dropFirst(stem.count + 1)
        var compressed = false
        var temporary = false
        if rest.hasSuffix(".gz.tmp") {
            rest = rest.dropLast(7)
            compressed = true
            temporary = true
        } else if rest.hasSuffix(".gz") {
            rest = rest.dropLast(3)
            compressed = true
        }
        guard rest.hasSuffix(fileExtension) else { return nil }
        rest = rest.dropLast(fileExtension.count)
        let stamp = rest.prefix(15)
        guard stamp.count == 15, LogFileLayout.isBasicStamp(stamp) else { return nil }
        rest = rest.dropFirst(15)
        var suffix = 0
        if !rest.isEmpty {
            guard rest.first == "-", let number = Int(rest.dropFirst()), number > 0,
                  rest.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            suffix = number
        }
        return RotatedFile(name: name, stamp: String(stamp), suffix: suffix,
                           compressed: compressed, temporary: temporary)
    }

    private static func isBasicStamp(_ text: Substring) -> Bool {
        for (offset, character) in text.enumerated() {
            if offset == 8 {
                if character != "T" { return false }
            } else if !(character.isASCII && character.isNumber) {
                return false
            }
        }
        return true
    }

    /// Rotated files (no temporaries), oldest first; where both the plain and the .gz of one
    /// rotation exist, only the .gz is listed (the plain one is about to be removed).
    public func rotatedFiles() -> [RotatedFile] {
        let entries = LogFileSystem().listDirectory(directory).compactMap(parseRotated)
        let compressedBases = Set(entries.filter { $0.compressed && !$0.temporary }.map(\.baseName))
        return LogFileLayout.oldestFirst(entries.filter {
            !$0.temporary && ($0.compressed || !compressedBases.contains($0.name))
        })
    }

    /// Paths of every file holding records, oldest first, the active file last: what `tail` and
    /// `har` read.
    public func allPathsOldestFirst() -> [String] {
        rotatedFiles().map { directory + "/" + $0.name } + [activePath]
    }

    static func oldestFirst(_ files: [RotatedFile]) -> [RotatedFile] {
        files.sorted { ($0.stamp, $0.suffix) < ($1.stamp, $1.suffix) }
    }
}
