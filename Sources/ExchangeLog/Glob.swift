/// The one glob of Tapwire: config rules (`match.host`, `match.path`, media types), the
/// query language's `FIELD=PATTERN` and the older `tail` / `har` filter words all use it.
///
/// - `*` matches any run of characters, including none and including `/` and `.`;
/// - `?` matches exactly one character (one Unicode scalar);
/// - everything else matches itself. With `caseInsensitive` both sides are lower-cased first
///   (hosts, media types, methods).
///
/// Matching is linear backtracking over the pattern's pieces (the last `*` is the only resume
/// point), so no pattern can make it exponential.
public struct Glob: Sendable, Equatable, CustomStringConvertible {
    public let pattern: String
    public let caseInsensitive: Bool
    private let pieces: [Piece]

    enum Piece: Sendable, Equatable {
        case literal([UInt8])
        case anyRun
        case anyOne
    }

    public init(_ pattern: String, caseInsensitive: Bool = false) {
        self.pattern = pattern
        self.caseInsensitive = caseInsensitive
        var pieces: [Piece] = []
        var literal: [UInt8] = []
        for byte in (caseInsensitive ? pattern.lowercased() : pattern).utf8 {
            switch byte {
            case UInt8(ascii: "*"), UInt8(ascii: "?"):
                if !literal.isEmpty { pieces.append(.literal(literal)); literal = [] }
                // `**` is `*`: merging keeps the matcher's work linear.
                if byte == UInt8(ascii: "?") { pieces.append(.anyOne) } else if pieces.last != .anyRun { pieces.append(.anyRun) }
            default:
                literal.append(byte)
            }
        }
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        self.pieces = pieces
    }

    public var description: String { pattern }

    /// Whether the pattern has a `*` or `?` (otherwise it matches only its own text).
    public var hasWildcards: Bool { pieces.contains { $0 == .anyRun || $0 == .anyOne } }

    /// The literal runs between wildcards, in order: every matching text contains each of them.
    public var literals: [String] {
        pieces.compactMap { if case .literal(let bytes) = $0 { return String(decoding: bytes, as: UTF8.self) } else { return nil } }
    }

    public static func == (a: Glob, b: Glob) -> Bool {
        a.pattern == b.pattern && a.caseInsensitive == b.caseInsensitive
    }

    public func matches(_ text: String) -> Bool {
        let subject = caseInsensitive ? text.lowercased() : text
        var copy = subject
        return copy.withUTF8 { matches(utf8: $0) }
    }

    private func matches(utf8 t: UnsafeBufferPointer<UInt8>) -> Bool {
        var pi = 0, ti = 0
        // Where to resume after the most recent `*`: the piece after it and the text offset it
        // has absorbed up to.
        var resumePiece = -1, resumeText = 0
        while true {
            if pi < pieces.count {
                switch pieces[pi] {
                case .anyRun:
                    resumePiece = pi + 1
                    resumeText = ti
                    pi += 1
                    continue
                case .anyOne:
                    if ti < t.count {
                        ti = Glob.nextScalar(t, ti)
                        pi += 1
                        continue
                    }
                case .literal(let bytes):
                    if Glob.hasPrefix(t, at: ti, bytes) {
                        ti += bytes.count
                        pi += 1
                        continue
                    }
                }
            } else if ti == t.count {
                return true
            }
            // Mismatch: let the last `*` absorb one more character, or fail.
            guard resumePiece >= 0, resumeText < t.count else { return false }
            resumeText = Glob.nextScalar(t, resumeText)
            pi = resumePiece
            ti = resumeText
        }
    }

    private static func hasPrefix(_ t: UnsafeBufferPointer<UInt8>, at offset: Int, _ bytes: [UInt8]) -> Bool {
        guard t.count - offset >= bytes.count else { return false }
        for (i, byte) in bytes.enumerated() where t[offset + i] != byte { return false }
        return true
    }

    /// The offset after the scalar starting at `i` (UTF-8 continuation bytes are 10xxxxxx).
    private static func nextScalar(_ t: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int {
        var j = i + 1
        while j < t.count && t[j] & 0xC0 == 0x80 { j += 1 }
        return j
    }
}
