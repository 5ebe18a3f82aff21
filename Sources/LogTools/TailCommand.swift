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
