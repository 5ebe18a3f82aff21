import XCTest
@testable import LogTools
import ResponseSerialization

final class CurlCommandTests: XCTestCase {
    func testQuotingRedactionCommentsAndCurlDefaultsLeftOut() throws {
        let record = RecordedRequestTests.record(
            headers: #"[["Content-Type","application/json"],["Authorization","[redacted]"],["X-Empty",""],["X-Quote","it's"]]"#,
            bodySize: 20, body: #"{"q":"it's $HOME `x`"}"#, url: "http://h/a?b=[1]")
        let text = CurlCommand.render(try RecordedRequest(record: record))
        XCTAssertTrue(text.contains("# redacted in the log, sent as [redacted] (fill in the real value): header Authorization"), text)
        XCTAssertTrue(text.contains(#"-H 'X-Quote: it'\''s'"#), text)
        XCTAssertTrue(text.contains("-H 'X-Empty;'"), "an empty value, which `X-Empty:` would remove: \(text)")
        XCTAssertTrue(text.contains("-H 'User-Agent:'") && text.contains("-H 'Accept:'"), text)
        XCTAssertTrue(text.contains(#"--data-raw '{"q":"it'\''s $HOME `x`"}'"#), text)
        XCTAssertTrue(text.contains("--globoff"), "brackets in the URL are not curl globs: \(text)")
    }

    func testBinaryBodyGoesThroughPrintf() {
        let text = CurlCommand.render(RecordedRequest(id: "x", method: "PUT", url: "http://h/", headers: [],
                                                      body: [0, 0x41, 0x27, 0x25, 0xFF], bodyMissing: nil, redactions: [], notes: []))
        XCTAssertTrue(text.hasPrefix("# tapwire curl x: PUT http://h/\nprintf '%b' '\\0000A\\0047%\\0377' |\n  curl"), text)
        XCTAssertTrue(text.contains("--data-binary @-"), text)
    }

    func testMissingBodyIsSaidNotGuessed() throws {
        let text = CurlCommand.render(try RecordedRequest(record: RecordedRequestTests.record(headers: "[]", bodySize: 12)))
        XCTAssertTrue(text.contains("# the body is left out: the record holds none of its 12 bytes"), text)
        XCTAssertFalse(text.contains("--data"), text)
    }

    /// What the shell hands curl when it runs the printed command: curl is a shell function
    /// that saves its arguments and standard input, in an empty directory where any command
    /// the text smuggles in would leave a `MARK` file.
    struct ShellRun { var arguments: [String]; var stdin: [UInt8]; var marked: Bool; var status: Int32 }

    static func run(_ command: String, shell: String) throws -> ShellRun {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = "curl() { for a in \"$@\"; do printf '%s' \"$a\"; printf '\\036'; done > args; cat > stdin; }\n" + command
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = ["-c", script]
        process.currentDirectoryURL = directory
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let args = (try? Data(contentsOf: directory.appendingPathComponent("args"))) ?? Data()
        var arguments = String(decoding: args, as: UTF8.self).components(separatedBy: "\u{1E}")
        if arguments.last == "" { arguments.removeLast() }
        let stdin = (try? Data(contentsOf: directory.appendingPathComponent("stdin"))) ?? Data()
        return ShellRun(arguments: arguments, stdin: Array(stdin),
                        marked: FileManager.default.fileExists(atPath: directory.appendingPathComponent("MARK").path),
                        status: process.terminationStatus)
    }

    static let shells = ["/bin/bash", "/bin/sh"].filter { FileManager.default.isExecutableFile(atPath: $0) }

    func testCommentsCannotEndEarlyWhateverTheRecordSays() throws {
        // A decode error quoting the body (a `'` and a line break) once ended its comment: the
        // rest of that line opened a quote that left the URL's `$(…)` to the shell.
        let hostile = "it's\nx=$(touch${IFS}MARK)`touch MARK`\r\u{1B}]0;T\u{07}\u{85}\u{2028}'"
        let request = RecordedRequest(
            id: "a\nb'", method: "POST", url: "http://h/inspect?x=$(touch${IFS}MARK)&y=`touch MARK`",
            headers: [("X-Q", "it's $(touch MARK) `touch MARK`")], body: Array("b'ody $(touch MARK)\n`touch MARK`".utf8),
            bodyMissing: nil, redactions: ["header \(hostile)"], notes: [hostile])
        var missing = request
        missing.body = nil
        missing.bodyMissing = "the record has no body value (unexpected character ''' at 3:\n\(hostile))"
        for r in [request, missing] {
            let text = CurlCommand.render(r)
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) where line.hasPrefix("#") {
                XCTAssertFalse(line.unicodeScalars.contains { CurlCommand.isControl($0) }, "\(line)")
            }
            for shell in Self.shells {
                let run = try Self.run(text, shell: shell)
                XCTAssertEqual(run.status, 0, "\(shell): \(text)")
                XCTAssertFalse(run.marked, "\(shell) ran a command from the record: \(text)")
                XCTAssertTrue(run.arguments.contains(r.url), "\(shell): \(run.arguments)")
                XCTAssertTrue(run.arguments.contains("X-Q: it's $(touch MARK) `touch MARK`"), "\(shell): \(run.arguments)")
                if let body = r.body {
                    XCTAssertTrue(run.arguments.contains(String(decoding: body, as: UTF8.self)), "\(shell): \(run.arguments)")
                }
            }
        }
    }

    func testBodyStartingWithAtOrDashIsSentAsItsBytes() throws {
        // `--data-binary '@/etc/hostname'` sent that file; `printf '-vX…'` took the body for options.
        for body in [Array("@/etc/hostname".utf8), Array("-vX".utf8) + [0] + Array("tail %s \\c 1".utf8) + [1, 0x37, 0o101]] {
            let request = RecordedRequest(id: "x", method: "POST", url: "http://h/", headers: [], body: body)
            let text = CurlCommand.render(request)
            for shell in Self.shells {
                let run = try Self.run(text, shell: shell)
                XCTAssertEqual(run.status, 0, "\(shell): \(text)")
                if body.contains(0) {
                    XCTAssertEqual(run.stdin, body, "\(shell): \(text)")
                    XCTAssertEqual(run.arguments.suffix(2), ["--data-binary", "@-"], "\(shell): \(run.arguments)")
                } else {
                    XCTAssertEqual(run.arguments.suffix(2), ["--data-raw", "@/etc/hostname"], "\(shell): \(run.arguments)")
                }
            }
        }
    }

    func testControlCharactersAreNeverPrintedRaw() throws {
        let controls = "\u{1B}]0;X\u{07}\u{1B}[2J\rOVER\u{08}"
        let request = RecordedRequest(id: "x", method: "POST", url: "http://h/\(controls)",
                                      headers: [("X-C", "a\(controls)")], body: Array("tab\t\(controls)\nend".utf8))
        let text = CurlCommand.render(request)
        XCTAssertFalse(text.unicodeScalars.contains { CurlCommand.isControl($0) && $0 != "\n" },
                       "printed as it is: \(text.debugDescription)")
        for shell in Self.shells {
            let run = try Self.run(text, shell: shell)
            XCTAssertEqual(run.status, 0, "\(shell): \(text)")
            XCTAssertEqual(run.stdin, request.body, "\(shell): \(text)")
            XCTAssertTrue(run.arguments.contains(request.url), "\(shell): \(run.arguments)")
            XCTAssertTrue(run.arguments.contains("X-C: a\(controls)"), "\(shell): \(run.arguments)")
        }
    }
}
