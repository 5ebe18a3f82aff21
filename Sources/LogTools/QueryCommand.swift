import ExchangeLog

/// `tapwire query`: the records of a log (every rotated file and the active one, as they are when
/// the command starts) that `query` keeps, in time order, to `output`; with `countOnly`, just their
/// number and a newline. Returns how many records matched (at most `limit`).
public enum QueryCommand {
    @discardableResult
    public static func run(layout: LogFileLayout, query: Query, options: QueryScanOptions,
                           output: ([UInt8]) throws -> Void) throws -> Int {
        let snapshot = try LogSnapshot(layout: layout)
        let count = try QueryRun(snapshot: snapshot, query: query, options: options).run(output: output)
        if case .countOnly = options.form { try output(Array("\(count)\n".utf8)) }
        return count
    }
}
