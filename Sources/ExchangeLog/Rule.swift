import HTTP1
import ResponseSerialization

/// `*` globs as in the config's `host` and `path` fields: `*` matches any run
/// of characters (including none); everything else matches itself. Hosts
/// compare case-insensitively.
public struct Glob: Sendable, Equatable, CustomStringConvertible {
    public let pattern: String
    private let parts: [[UInt8]]
    private let caseInsensitive: Bool

    public init(_ pattern: String, caseInsensitive: Bool = false) {
        self.pattern = pattern
        self.caseInsensitive = caseInsensitive
        let p = caseInsensitive ? pattern.lowercased() : pattern
        parts = p.split(separator: "*", omittingEmptySubsequences: false).map { Array($0.utf8) }
    }

    public var description: String { pattern }

    public func matches(_ text: String) -> Bool {
        let t = Array((caseInsensitive ? text.lowercased() : text).utf8)
        guard parts.count > 1 else { return t == parts[0] }
        guard let first = parts.first, let last = parts.last,
              t.count >= first.count + last.count,
              t.starts(with: first), t.suffix(last.count).elementsEqual(last) else { return false }
        var i = first.count
        let end = t.count - last.count
        for part in parts.dropFirst().dropLast() where !part.isEmpty {
            guard let at = Glob.find(part, in: t, from: i, to: end) else { return false }
            i = at + part.count
        }
        return i <= end
    }

    private static func find(_ needle: [UInt8], in hay: [UInt8], from: Int, to: Int) -> Int? {
        guard to - from >= needle.count else { return nil }
        var i = from
        while i + needle.count <= to {
            if hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

/// A status pattern: `404`, `4xx`, `200-299`.
public struct StatusPattern: Sendable, Equatable, CustomStringConvertible {
    public let range: ClosedRange<Int>
    public let description: String

    public init?(_ text: String) {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        description = text
        if t.count == 3, t.hasSuffix("xx"), let d = Int(t.prefix(1)), (1...5).contains(d) {
            range = (d * 100)...(d * 100 + 99)
        } else if let dash = t.firstIndex(of: "-"), let lo = Int(t[..<dash]), let hi = Int(t[t.index(after: dash)...]),
                  (100...999).contains(lo), (100...999).contains(hi), lo <= hi {
            range = lo...hi
        } else if let v = Int(t), (100...999).contains(v), t.allSatisfy(\.isNumber) {
            range = v...v
        } else {
            return nil
        }
    }

    public func matches(_ status: Int) -> Bool { range.contains(status) }
}

/// A MIME pattern for rule matching: `application/json`, `application/*+json`,
/// `text/*`, `*/*`. Parameters are ignored on both sides.
public struct MediaTypePattern: Sendable, Equatable, CustomStringConvertible {
    public let type: Glob
    public let subtype: Glob
    public let description: String

    public init?(_ text: String) {
        let bare = text.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let pieces = bare.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count == 2, !pieces[0].isEmpty, !pieces[1].isEmpty else { return nil }
        type = Glob(String(pieces[0]), caseInsensitive: true)
        subtype = Glob(String(pieces[1]), caseInsensitive: true)
        description = text
    }

    public func matches(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let bare = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let pieces = bare.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count == 2 else { return false }
        return type.matches(String(pieces[0])) && subtype.matches(String(pieces[1]))
    }
}

/// The `match` block of a rule: every present field must match.
public struct RuleMatch: Sendable, Equatable {
    public var host: Glob?
    public var path: Glob?
    public var methods: [String]?
    public var status: [StatusPattern]?
    public var contentType: [MediaTypePattern]?
    /// Header names that must be present (request or response).
    public var headers: [String]?
    public init() {}
}

/// Which serializer a rule runs, with its options (`serializer` in the config).
public struct SerializerSpec: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case data, string, json, propertyList, jsonLines, form, eventStream, none
    }
    public var kind: Kind
    /// `string`: an IANA charset name that overrides the Content-Type charset.
    public var encoding: String?
    /// `json`: accept a scalar at top level (default true, as Alamofire).
    public var allowFragments: Bool = true
    /// `data`: how many leading bytes to log as base64 (0 = size only).
    public var base64Bytes: Int = 0
    public var emptyResponseCodes: Set<Int>?
    public var emptyRequestMethods: Set<String>?
    public init(kind: Kind) { self.kind = kind }
}

/// `validate` in a rule: Alamofire's validators, run before the serializer.
public struct ValidationSpec: Sendable, Equatable {
    public var statusCodes: [StatusPattern]?
    public var contentTypes: [String]?
    public init() {}
}

public struct Rule: Sendable, Equatable {
    public var name: String
    public var match: RuleMatch
    public var serializer: SerializerSpec
    public var validate: ValidationSpec?
    public var select: [JSONPointer]
    public var redact: [JSONPointer]
    public init(name: String, match: RuleMatch, serializer: SerializerSpec, validate: ValidationSpec? = nil,
                select: [JSONPointer] = [], redact: [JSONPointer] = []) {
        self.name = name; self.match = match; self.serializer = serializer
        self.validate = validate; self.select = select; self.redact = redact
    }
}

import Foundation
