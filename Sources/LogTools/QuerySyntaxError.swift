/// Why a query expression cannot be used. `description` is the one line the CLI prints before
/// exiting 2: `query:1:8: expected a value after '>='` (line, then the column, counted in
/// characters from 1, where the problem is; the end of the text is its length + 1).
public struct QuerySyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var column: Int
    public var message: String

    public init(column: Int, message: String) {
        self.column = column
        self.message = message
    }

    /// Queries are one line (the command line's words joined by spaces).
    public var line: Int { 1 }

    public var description: String { "query:\(line):\(column): \(message)" }
}
