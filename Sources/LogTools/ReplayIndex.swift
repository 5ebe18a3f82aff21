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
    }

    /// Reads every `http` record of the log in `directory`, oldest first: the newest record
    /// for a key decides, and a newest record whose body was not captured whole leaves the
    /// key without an answer. Records without a response (a transport failure) answer nothing
    /// and are passed over.
    public static func build(directory: String, fileName: String, match: ReplayMatch) throws -> Built {
        let source = RecordSource(directory: directory, fileName: fileName)
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
            do {
                answers[key] = try RecordedResponse.answer(record: record, id: id)
                refused.remove(key)
            } catch {
                answers[key] = nil
                refused.insert(key)
            }
        }
        return Built(answers: answers, unusable: refused.count)
    }
}
