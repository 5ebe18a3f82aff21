import ExchangeLog
import HTTP1
import ResponseSerialization

/// The answers of a log directory, by `ReplayMatch` key, for offline replay. Built off the
/// event loops (it parses every `http` record of the log), once at start and at each reload.
public enum ReplayIndex {
    public struct Built {
        public var answers: [String: ReplayedResponse]
        /// Requests whose newest record cannot be served (its body not whole): they get `notFound`.
        public var unusable: Int
        /// Rotated files that could not be read whole (corrupt gzip), with why: their records up
        /// to the damage are used, the rest of the directory too.
        public var unreadable: [String] = []
    }

    /// Reads every `http` record of the log in `directory`, oldest first: the newest record
    /// for a key decides, and a newest record whose body was not captured whole leaves the
    /// key without an answer. Records without a response (a transport failure) answer nothing
    /// and are passed over. A record that is not a full answer (a 304, a 206, a HEAD's
    /// answer: `ReplayedResponse.isFull`) never displaces a full one: a browser's
    /// revalidation must not turn the page it revalidated into an empty 304.
    public static func build(directory: String, fileName: String, match: ReplayMatch) throws -> Built {
        let source = RecordSource(directory: directory, fileName: fileName)
        var unreadable: [String] = []
        source.skipsUnreadableRotatedFile = { unreadable.append("\($0)") }
        var answers: [String: ReplayedResponse] = [:]
        var refused: Set<String> = []
        let kindHTTP = Array("\"kind\":\"http\"".utf8)
        while let line = try source.nextLine() {
            // Only http records are parsed; the kind is among a record's first bytes.
            guard line.count > 40, line.prefix(80).firstRange(of: kindHTTP) != nil,
                  let record = try? JSONParser.parse(line, allowFragments: false),
                  let id = record[member: "id"]?.stringValue else { continue }
            let view = RecordView(json: record)
            guard let method = view.method, let url = view.url, view.response != nil else { continue }
            let key = match.key(method: method, url: url)
            let held = answers[key]
            do {
                let answer = try RecordedResponse.answer(record: record, id: id)
                if let held, held.isFull, !answer.isFull { continue }
                answers[key] = answer
                refused.remove(key)
            } catch {
                answers[key] = nil
                refused.insert(key)
            }
        }
        return Built(answers: answers, unusable: refused.count, unreadable: unreadable)
    }
}
