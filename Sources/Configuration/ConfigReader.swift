import ResponseSerialization

/// One problem in a config file, named by its JSON path
/// (`rules[2].match.status: expected ...`), as `check-config` prints it.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) { self.path = path; self.message = message }
    /// One line: a control character quoted from the file (a newline inside a value) is
    /// written escaped, so scripts can read one error per line.
    public var description: String {
        let text = path.isEmpty ? message : "\(path): \(message)"
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
        return text.unicodeScalars.map { scalar in
            switch scalar {
            case "\n": return "\\n"
            case "\r": return "\\r"
            case "\t": return "\\t"
            default: return scalar.value < 0x20 || scalar.value == 0x7F ? String(format: "\\u%04X", scalar.value) : String(scalar)
            }
        }.joined()
    }
}

/// Every problem found in one config file.
public struct ConfigErrorList: Error, Sendable, CustomStringConvertible {
    public var errors: [ConfigError]
    public init(_ errors: [ConfigError]) { self.errors = errors }
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// Reads typed fields out of a parsed JSON document, collecting every error
/// with its path instead of stopping at the first, so one run of
/// `check-config` lists all of them.
extension JSON {
    var isString: Bool { if case .string = self { return true } else { return false } }
}

final class ConfigReader {
    private(set) var errors: [ConfigError] = []

    func fail(_ path: String, _ message: String) { errors.append(ConfigError(path: path, message: message)) }

    static func join(_ base: String, _ key: String) -> String { base.isEmpty ? key : "\(base).\(key)" }

    static func describe(_ v: JSON) -> String {
        switch v {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number(let t): return "the number \(t)"
        case .string(let s): return "the string \"\(s)\""
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// The members of an object, reporting unknown keys and duplicates.
    func object(_ v: JSON?, _ path: String, allowed: [String]) -> [String: JSON]? {
        guard let v else { return nil }
        guard case .object(let members) = v else {
            fail(path, "expected an object, found \(Self.describe(v))")
            return nil
        }
        var out: [String: JSON] = [:]
        for m in members {
            let p = Self.join(path, m.key)
            if !allowed.contains(m.key) {
                fail(p, "unknown key (allowed here: \(allowed.joined(separator: ", ")))")
            } else if out[m.key] != nil {
                fail(p, "duplicate key")
            } else {
                out[m.key] = m.value
            }
        }
        return out
    }

    func string(_ v: JSON?, _ path: String) -> String? {
        guard let v else { return nil }
        guard case .string(let s) = v else { fail(path, "expected a string, found \(Self.describe(v))"); return nil }
        return s
    }

    /// A string or null (`upstream.proxy`, `tls.upstreamCAFile`).
    func optionalString(_ v: JSON?, _ path: String) -> String?? {
        guard let v else { return nil }
        if case .null = v { return .some(nil) }
        return string(v, path).map { .some($0) }
    }

    func bool(_ v: JSON?, _ path: String) -> Bool? {
        guard let v else { return nil }
        guard case .bool(let b) = v else { fail(path, "expected true or false, found \(Self.describe(v))"); return nil }
        return b
    }

    func int(_ v: JSON?, _ path: String, min: Int, max: Int = Int.max) -> Int? {
        guard let v else { return nil }
        guard case .number(let t) = v, let n = Int(t) else {
            fail(path, "expected an integer, found \(Self.describe(v))"); return nil
        }
        guard n >= min && n <= max else {
            fail(path, max == Int.max ? "must be at least \(min), found \(n)" : "must be between \(min) and \(max), found \(n)")
            return nil
        }
        return n
    }

    /// Seconds, integer or fractional, within bounds.
    func seconds(_ v: JSON?, _ path: String, min: Double = 0.001, max: Double = 86_400 * 365) -> Double? {
        guard let v else { return nil }
        guard case .number(let t) = v, let d = Double(t) else {
            fail(path, "expected a number of seconds, found \(Self.describe(v))"); return nil
        }
        guard d >= min && d <= max else {
            fail(path, "must be between \(Self.plain(min)) and \(Self.plain(max)) seconds, found \(t)"); return nil
        }
        return d
    }

    /// 31536000, not 31536000.0; 0.001 stays as it is.
    static func plain(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }

    func array(_ v: JSON?, _ path: String) -> [(String, JSON)]? {
        guard let v else { return nil }
        guard case .array(let items) = v else { fail(path, "expected an array, found \(Self.describe(v))"); return nil }
        return items.enumerated().map { ("\(path)[\($0.offset)]", $0.element) }
    }

    func strings(_ v: JSON?, _ path: String) -> [String]? {
        guard let items = array(v, path) else { return nil }
        var out: [String] = []
        var ok = true
        for (p, item) in items {
            if let s = string(item, p) { out.append(s) } else { ok = false }
        }
        return ok ? out : nil
    }

    /// A string or an array of strings (`method: "GET"` or `method: ["GET", "HEAD"]`).
    func stringOrStrings(_ v: JSON?, _ path: String) -> [String]? {
        guard let v else { return nil }
        if case .string(let s) = v { return [s] }
        return strings(v, path)
    }

    /// A list whose items are checked by the caller, each with its path; one item alone (a
    /// string or an object) stands for a one-item list, at `path` itself.
    func listEntries(_ v: JSON?, _ path: String) -> [(String, JSON)]? {
        guard let v else { return nil }
        switch v {
        case .string, .object: return [(path, v)]
        default: return array(v, path)
        }
    }

    /// Parses each string with `parse`; reports the ones it refuses.
    func parsed<T>(_ v: JSON?, _ path: String, expected: String, _ parse: (String) -> T?) -> [T]? {
        guard let v else { return nil }
        let items: [(String, JSON)]
        if case .string = v { items = [(path, v)] } else { guard let a = array(v, path) else { return nil }; items = a }
        var out: [T] = []
        var ok = true
        for (p, item) in items {
            guard let s = string(item, p) else { ok = false; continue }
            if let t = parse(s) { out.append(t) } else { fail(p, "expected \(expected), found \"\(s)\""); ok = false }
        }
        return ok ? out : nil
    }
}
