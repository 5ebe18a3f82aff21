import Foundation
import HTTP1
import ProxyEngine
import ResponseSerialization

/// A `replay` block (top level, or on one `listen` entry): answer from the records of a log
/// directory instead of the network.
public struct ReplaySettings: Sendable, Equatable {
    /// `from`: the log directory (its active and rotated files) to answer from.
    public var directory: String
    /// `match` and `ignoreParams`.
    public var match = ReplayMatch()
    /// `notFound`: what a request without a recorded answer gets.
    public var notFound: ReplayResponder.NotFound = .notFound

    public init(directory: String) { self.directory = directory }

    /// Why `directory` cannot be replayed from (nil when it can): it must exist, as a
    /// directory, when the config is read, so a typo stops `run` with exit 2.
    static func problem(directory: String) -> String? {
        if directory.isEmpty { return "must not be empty" }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            return "\(directory) does not exist"
        }
        return isDirectory.boolValue ? nil : "\(directory) is not a directory"
    }

    /// Reads a `replay` object at `path`; nil (errors reported) when it is not usable.
    static func read(_ v: JSON?, _ path: String, _ r: ConfigReader) -> ReplaySettings? {
        guard let o = r.object(v, path, allowed: ["from", "match", "ignoreParams", "notFound"]) else { return nil }
        let before = r.errors.count
        var settings = ReplaySettings(directory: "")
        if let from = r.string(o["from"], "\(path).from") {
            if let why = problem(directory: from) { r.fail("\(path).from", why) } else { settings.directory = from }
        } else if o["from"] == nil {
            r.fail("\(path).from", "required: the log directory to answer from")
        }
        if let fields = r.stringOrStrings(o["match"], "\(path).match") {
            for (i, f) in fields.enumerated() where !ReplayMatch.fieldNames.contains(f) {
                r.fail("\(path).match[\(i)]", "expected one of \(ReplayMatch.fieldNames.map { "\"\($0)\"" }.joined(separator: ", ")), found \"\(f)\"")
            }
            if !fields.contains("url") { r.fail("\(path).match", "must include \"url\": without it every request would get the same answer") }
            settings.match.method = fields.contains("method")
            settings.match.url = true
        }
        if let params = r.strings(o["ignoreParams"], "\(path).ignoreParams") { settings.match.ignoreParams = Set(params) }
        if let nf = r.string(o["notFound"], "\(path).notFound") {
            if let policy = ReplayResponder.NotFound(rawValue: nf) { settings.notFound = policy } else {
                r.fail("\(path).notFound", "expected \"forward\", \"404\" or \"502\", found \"\(nf)\"")
            }
        }
        return r.errors.count == before ? settings : nil
    }
}
