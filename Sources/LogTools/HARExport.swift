import ResponseSerialization

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
