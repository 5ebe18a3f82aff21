import ResponseSerialization

/// Finds records by their `id` in one pass over a log (rotated files included). A line is
/// parsed only when its first member is the id looked for: records start `{"id":"…"`, so the
/// other lines of a large log cost a prefix comparison, not a parse.
public enum RecordLookup {
    public enum LookupError: Error, Equatable, CustomStringConvertible {
        /// No record has this id (a `loss` record has none, so it never matches).
        case unknownID(String)
        public var description: String {
            switch self {
            case .unknownID(let id): return "no record with id \(id)"
            }
        }
    }

    /// The records with `ids`, by id; throws `unknownID` naming the first id not found.
    public static func records(_ ids: [String], in source: RecordSource) throws -> [String: JSON] {
        var wanted: [[UInt8]: String] = [:]
        for id in ids {
            var prefix = Array("{\"id\":".utf8)
            JSONWriter.appendQuoted(id, into: &prefix)
            wanted[prefix] = id
        }
        let prefixLengths = Set(wanted.keys.map(\.count))
        var found: [String: JSON] = [:]
        while found.count < wanted.count, let line = try source.nextLine() {
            for length in prefixLengths where line.count > length {
                guard let id = wanted[Array(line[..<length])], found[id] == nil,
                      line[length] == UInt8(ascii: ",") || line[length] == UInt8(ascii: "}") else { continue }
                if let record = try? JSONParser.parse(line, allowFragments: false),
                   record[member: "id"]?.stringValue == id {
                    found[id] = record
                }
            }
        }
        for id in ids where found[id] == nil { throw LookupError.unknownID(id) }
        return found
    }

    /// The `http` records `query` keeps, oldest first: the exchanges `tapwire replay --query`
    /// sends again (a tunnel or a loss record is no request to send). Read once, before any is
    /// sent, so the replays the proxy logs meanwhile are not read back.
    public static func exchanges(matching query: Query, in source: RecordSource) throws -> [(id: String, record: JSON)] {
        var found: [(id: String, record: JSON)] = []
        while let line = try source.nextLine() {
            guard query.matches(line: line), let record = try? JSONParser.parse(line, allowFragments: false),
                  RecordView(json: record).kind == "http", let id = record[member: "id"]?.stringValue else { continue }
            found.append((id, record))
        }
        return found
    }
}
