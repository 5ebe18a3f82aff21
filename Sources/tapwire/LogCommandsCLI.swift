import Configuration
import ExchangeLog
import Foundation
import LogTools

/// `tapwire tail`, `tapwire har` and `tapwire query`: read the records a running (or stopped)
/// proxy wrote, including rotated and compressed files.
enum LogCommandsCLI {
    private static func source(_ config: TapwireConfiguration, _ logDirectory: String?, follow: Bool) -> RecordSource {
        RecordSource(directory: logDirectory ?? config.log.directory, fileName: config.log.fileName, follow: follow)
    }

    private static func filter(_ words: [String]) -> Query {
        do {
            return try Query.parse(words)
        } catch {
            fail("\(error)", code: 2)
        }
    }

    static func tail(config: TapwireConfiguration, logDirectory: String?, follow: Bool, json: Bool, filterWords: [String]) -> Int32 {
        let f = filter(filterWords)
        let formatter = TailFormatter(color: TailFormatter.colorWanted())
        do {
            try TailCommand.run(source: source(config, logDirectory, follow: follow), filter: f, formatter: formatter,
                                rawJSON: json) { bytes in FileHandle.standardOutput.write(Data(bytes)) }
            return 0
        } catch {
            FileHandle.standardError.write(Data("tapwire: \(error)\n".utf8))
            return 1
        }
    }

    static func har(config: TapwireConfiguration, logDirectory: String?, output: String?, filterWords: [String]) -> Int32 {
        let f = filter(filterWords)
        let handle: FileHandle
        if let output, output != "-" {
            guard FileManager.default.createFile(atPath: output, contents: nil), let h = FileHandle(forWritingAtPath: output) else {
                fail("cannot write \(output)", code: 1)
            }
            handle = h
        } else {
            handle = FileHandle.standardOutput
        }
        do {
            let writer = HARWriter(output: { bytes in try handle.write(contentsOf: bytes) })
            let n = try HARExport.run(source: source(config, logDirectory, follow: false), filter: f, writer: writer)
            if let output, output != "-" { FileHandle.standardError.write(Data("tapwire: \(n) entries written to \(output)\n".utf8)) }
            return 0
        } catch {
            FileHandle.standardError.write(Data("tapwire: \(error)\n".utf8))
            return 1
        }
    }

    static let queryHelp = """
    usage: tapwire query [--config FILE] [--log-dir DIR] [--json] [--count] [--limit N] [--reverse] EXPR...

    Prints the records EXPR keeps, oldest first (--reverse: newest first), from every rotated
    file and the active one; --json prints them as stored, --count only their number.
    tail and har take the same EXPR. The words of EXPR are joined by spaces. Full reference:
    docs/query.md.

      status>=500 host=*.example.com   side by side: and    a or b, a | b    not a, !a    ( )
      FIELD OP VALUE    OP: = != < <= > >= ~ (regex, case-insensitive); = with * ? is a glob
      fields: id kind method url host path query status type mime rule error failure client
              upstream duration latency wait size reqsize time
              req.header.NAME res.header.NAME json:/POINTER reqjson:/POINTER
      status=404 4xx 200-299      duration>250ms (us ms s m h)     size>=10KB (B KB MB GB)
      time>=2026-12-02T10:00:00Z  time>=-1h                         json:/user/role=admin
      json:/user/role ~^adm       a regex after a pointer follows a space (~0 ~1: escapes)
      ( ) | & end unquoted text: secret|admin is secret | admin; quote a literal "a|b"
      error  failure  json:/x     a bare field: it has a value (error: any failure or loss)
      word "a phrase"             searches URL, header values and decoded bodies (any case)
      mitmproxy: ~c 404 ~d HOST ~b RE ~bq ~bs ~m RE ~u RE ~h RE ~hq ~hs ~t RE ~tq ~ts ~e ~s ~q
                 ~a ~src RE ~dst RE ~http ~tcp ~websocket ~all
    Exit status: 0, 1 when the log cannot be read, 2 for a bad expression (query:1:COLUMN: ...).

    """

    static func query(config: TapwireConfiguration, logDirectory: String?, json: Bool, count: Bool, limit: String?,
                      reverse: Bool, words: [String]) -> Int32 {
        let q = filter(words)
        var n: Int?
        if let limit {
            guard let value = Int(limit), value >= 0 else { fail("--limit expects a count such as 50, found \(limit)", code: 2) }
            n = value
        }
        let form: QueryOutputForm = count ? .countOnly : json ? .json : .formatted(TailFormatter(color: TailFormatter.colorWanted()))
        let layout = LogFileLayout(directory: LogSettings(directory: logDirectory ?? config.log.directory,
                                                          fileName: config.log.fileName).resolvedDirectory,
                                   fileName: config.log.fileName)
        do {
            try QueryCommand.run(layout: layout, query: q, options: QueryScanOptions(form: form, limit: n, reverse: reverse)) { bytes in
                try FileHandle.standardOutput.write(contentsOf: bytes)
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("tapwire: \(error)\n".utf8))
            return 1
        }
    }
}
