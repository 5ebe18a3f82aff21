import ExchangeLog
import ResponseSerialization

/// `tapwire tail`: reads `source`, keeps what `filter` matches and hands each line (with its `\n`)
/// to `output`. With `rawJSON` the record's bytes are passed unchanged (`--json`); otherwise one
/// `formatter` line. Returns how many records were printed.
public enum TailCommand {
    @discardableResult
    public static func run(source: RecordSource, filter: Query, formatter: TailFormatter,
                           rawJSON: Bool, output: ([UInt8]) throws -> Void) throws -> Int {
        var printed = 0
        while let line = try source.nextLine() {
            // The prefilter rules most non-matching lines out before they are parsed; every
            // line kept is parsed, so one that is not a JSON object is never printed.
            guard filter.prefilter.mayMatch(line), let record = try? JSONParser.parse(line, allowFragments: false),
                  filter.matches(record) else { continue }
            if rawJSON {
                try output(line + [10])
            } else {
                try output(Array(formatter.format(record).utf8) + [10])
            }
            printed += 1
        }
        return printed
    }
}

/// `tapwire har`: every exchange record `filter` matches, as one HAR document written through
/// `writer` (finished here). Returns how many entries were written.
public enum HARExport {
    @discardableResult
    public static func run(source: RecordSource, filter: Query, writer: HARWriter) throws -> Int {
        while let line = try source.nextLine() {
            guard filter.prefilter.mayMatch(line),
                  let record = try? JSONParser.parse(line, allowFragments: false), filter.matches(record) else {
                continue
            }
            try writer.write(record)
        }
        try writer.finish()
        return writer.entryCount
    }
}

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
