import Foundation

/// `tapwire curl ID`: a POSIX shell command line that sends a recorded request again with curl.
/// Lines before it are shell comments: what was redacted (sent as `[redacted]`, never guessed),
/// a body the record does not hold, what differs from the original.
public enum CurlCommand {
    /// The command, ending in a newline.
    public static func render(_ request: RecordedRequest) -> String {
        var lines: [String] = [comment("tapwire curl \(request.id): \(request.method) \(request.url)")]
        if !request.redactions.isEmpty {
            lines.append(comment("redacted in the log, sent as [redacted] (fill in the real value): "
                                 + request.redactions.joined(separator: ", ")))
        }
        if let missing = request.bodyMissing {
            lines.append(comment("the body is left out: \(missing)"))
        }
        for note in request.notes { lines.append(comment(note)) }
        if !request.unsendableHeaders.isEmpty {
            lines.append(comment("left out, not UTF-8 in the request and logged with U+FFFD in place of their bytes: "
                                 + request.unsendableHeaders.joined(separator: ", ")))
        }

        var head = "curl -sS --globoff --path-as-is"
        let upper = request.method.uppercased()
        if upper == "HEAD" {
            head += " --head"
        } else if upper != "GET" || !(request.body ?? []).isEmpty {
            head += " -X " + word(request.method)
        }
        head += " " + word(request.url)

        var arguments: [String] = []
        let names = Set(request.headers.map { $0.name.lowercased() })
        for header in request.headers {
            // `Name:` would remove the field: curl wants `Name;` for an empty value.
            arguments.append("-H " + word(header.value.isEmpty ? header.name + ";" : header.name + ": " + header.value))
        }
        // curl's own defaults, left out when the original request did not have them.
        if !names.contains("user-agent") { arguments.append("-H 'User-Agent:'") }
        if !names.contains("accept") { arguments.append("-H 'Accept:'") }
        var pipe: String?
        if let body = request.body, !body.isEmpty {
            if !names.contains("content-type") { arguments.append("-H 'Content-Type:'") }
            arguments.append("-H 'Expect:'")
            // --data-raw, not --data-binary: curl reads the file a leading `@` names.
            if let text = printableText(body) {
                arguments.append("--data-raw " + quoted(text))
            } else {
                pipe = printf(body)
                arguments.append("--data-binary @-")
            }
        }
        var command = (pipe.map { $0 + " |\n  " } ?? "") + head
        for argument in arguments { command += " \\\n  " + argument }
        lines.append(command)
        return lines.joined(separator: "\n") + "\n"
    }

    /// The only way a comment line is written: `text` comes from the record (URL, error
    /// messages quoting the body), so a line break in it would end the comment and leave the
    /// rest to the shell. Every control character, line breaks included, becomes a visible
    /// escape, which also keeps terminal control sequences off the screen.
    static func comment(_ text: String) -> String {
        var line = "# "
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                line += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                line.unicodeScalars.append(scalar)
            }
        }
        return line
    }

    /// C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value < 0xA0) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    /// `text` as one shell word of plain printable text: single-quoted, or, when it holds a
    /// control character other than tab and line feed (which would reach the terminal as
    /// they are), written by printf inside double quotes. Command substitution drops
    /// trailing line feeds, which no URL or header field holds.
    static func word(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) && $0 != "\t" && $0 != "\n" }) else { return quoted(text) }
        return "\"$(" + printf(Array(text.utf8)) + ")\""
    }

    /// `text` in single quotes, for any POSIX shell.
    public static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The body as text when it is UTF-8 without control characters other than tab and line
    /// feed: NUL, which no shell argument can hold, and the rest, which would reach the
    /// terminal as they are when the command is printed.
    static func printableText(_ body: [UInt8]) -> String? {
        guard let text = String(validating: body, as: UTF8.self),
              !text.unicodeScalars.contains(where: { isControl($0) && $0 != "\t" && $0 != "\n" }) else { return nil }
        return text
    }

    /// A printf command writing exactly `bytes`. They go in the argument of `%b`, never in
    /// the format, so a leading `-` is not an option and `%` is not a conversion.
    static func printf(_ bytes: [UInt8]) -> String {
        "printf '%b' '" + bytes.map(octalEscape).joined() + "'"
    }

    /// A byte for printf's `%b` argument: itself when a plain printable byte, else `\0ooo`
    /// (`%b` reads up to three digits after `\0`, so a digit that follows stays itself).
    static func octalEscape(_ byte: UInt8) -> String {
        if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "'") && byte != UInt8(ascii: "\\") {
            return String(UnicodeScalar(byte))
        }
        let octal = String(byte, radix: 8)
        return "\\0" + String(repeating: "0", count: 3 - octal.count) + octal
    }
}
