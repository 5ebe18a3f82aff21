import Foundation
import HTTP1

/// Why one line of an NDJSON body is not JSON; `line` counts from 1.
public struct JSONLinesError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The line, counting from 1.
    public var line: Int
    /// Why the line is not JSON; its offset counts from the line's start.
    public var parseError: JSONParseError
    /// - Parameters:
    ///   - line: The line, counting from 1.
    ///   - parseError: Why it is not JSON.
    public init(line: Int, parseError: JSONParseError) { self.line = line; self.parseError = parseError }
    /// `line N: message at byte M`.
    public var description: String { "line \(line): \(parseError.description)" }
}

/// The NDJSON / JSON Lines format: one JSON value a line.
public enum JSONLines {
    /// Every non-blank line parsed as one JSON value (fragments allowed), in
    /// order. Lines end at LF; a CR before it is dropped.
    /// - Parameters:
    ///   - data: The body, as received.
    ///   - maxDepth: Nesting deeper than this fails a line; default 512.
    public static func parse(_ data: Data, maxDepth: Int = 512) throws(JSONLinesError) -> [JSON] {
        var values: [JSON] = []
        var lineNumber = 0
        var result: Result<Void, JSONLinesError> = .success(())
        data.withUnsafeBytes { (all: UnsafeRawBufferPointer) in
            var start = 0
            while start <= all.count {
                var end = start
                while end < all.count && all[end] != 0x0A { end += 1 }
                lineNumber += 1
                var lineEnd = end
                if lineEnd > start && all[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                let line = UnsafeRawBufferPointer(rebasing: all[start..<lineEnd])
                if !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
                    do throws(JSONParseError) {
                        values.append(try JSONParser.parse(line, allowFragments: true, maxDepth: maxDepth))
                    } catch {
                        result = .failure(JSONLinesError(line: lineNumber, parseError: error))
                        return
                    }
                }
                start = end + 1
            }
        }
        if case .failure(let error) = result { throw error }
        return values
    }
}

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// NDJSON / JSON Lines → a JSON array of the values. Blank lines are
    /// skipped; a bad line fails with `jsonSerializationFailed(JSONLinesError)`
    /// naming the line. Nil data fails with `inputDataNil`; an empty body (or an
    /// empty-allowed response) is an empty array. Refuses a truncated body,
    /// whose last line would be cut.
    /// - Parameters:
    ///   - maxDepth: Nesting deeper than this fails a line; default 512.
    ///   - emptyResponseCodes: Statuses whose empty body is an empty array, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is an empty array;
    ///     default HEAD.
    public static func jsonLines(maxDepth: Int = 512,
                                 emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                                 emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        .arrayValued(emptyResponseCodes: emptyResponseCodes, emptyRequestMethods: emptyRequestMethods) { data in
            do {
                return .success(try JSONLines.parse(data, maxDepth: maxDepth))
            } catch {
                return .failure(serializationFailure(.jsonSerializationFailed(error: error)))
            }
        }
    }
}
