import Configuration
import Foundation
import LogTools

/// `tapwire tail` and `tapwire har`: read the records a running (or stopped)
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
}
