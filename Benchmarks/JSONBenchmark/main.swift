// Measures Tapwire's JSON parse, parse+write and the log's validate+compact (with key
// redaction on) on deterministic API-like documents, against Foundation's JSONSerialization
// and, given `--simdjson PATH` (Benchmarks/SimdjsonBenchmark, built by `make bench-json`),
// simdjson's minify and validation of the same bytes. Exits 1 when below the goals
// (parse >= 200 MB/s on every document, parse+write >= 10x Foundation's parse+write,
// validate+compact >= 1000 MB/s). Compare ratios within one run: the figures move with
// the machine's load, ratios much less.
import Dispatch
import Foundation
import ResponseSerialization

/// Deterministic generator (SplitMix64), so every run measures the same bytes.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

let words = ["alpha", "beta", "proxy", "request", "latency", "cache", "inspect", "socket",
             "header", "stream", "swift", "event", "buffer", "route", "token", "signal"]
let phrases = ["Fast \\\"typed\\\" JSON", "Déjà vu – naïve café", "Line one\\nLine two",
               "日本語のテキスト", "Emoji 🚀 and ✓ marks", "Tab\\tseparated\\tvalues",
               "Path C:\\\\tmp\\\\file", "Unicode escape \\u00e9\\u4e2d\\ud83d\\ude00", "plain ascii description text"]

func item(_ index: Int, _ rng: inout SplitMix64) -> String {
    let name = "\(words[rng.below(words.count)])-\(words[rng.below(words.count)])-\(index)"
    let login = "\(words[rng.below(words.count)])\(rng.below(10000))"
    let tags = (0..<(1 + rng.below(5))).map { _ in "\"\(words[rng.below(words.count)])\"" }.joined(separator: ",")
    let samples = (0..<(2 + rng.below(6))).map { _ -> String in
        switch rng.below(4) {
        case 0: return String(rng.below(1_000_000))
        case 1: return "-\(rng.below(1000)).\(rng.below(1000))"
        case 2: return "\(rng.below(10)).\(rng.below(100000))e\(rng.below(30))"
        default: return "12345678901234567890"
        }
    }.joined(separator: ",")
    return """
    {"id":\(100000 + index * 7),"node_id":"MDEwOlJlcG9zaXRvcnk\(rng.next() % 100000)","name":"\(name)",\
    "full_name":"\(login)/\(name)","private":\(rng.below(2) == 0),"owner":{"login":"\(login)",\
    "id":\(rng.below(90_000_000)),"avatar_url":"https://avatars.example.com/u/\(rng.below(90_000_000))?v=4",\
    "type":"User","site_admin":false},"html_url":"https://example.com/\(login)/\(name)",\
    "description":"\(phrases[rng.below(phrases.count)])","fork":false,"score":\(rng.below(100)).\(rng.below(100)),\
    "created_at":"2026-0\(1 + rng.below(9))-1\(rng.below(10))T10:1\(rng.below(10)):00Z","homepage":null,\
    "size":\(rng.below(500000)),"stargazers_count":\(rng.below(100000)),"language":"Swift",\
    "topics":[\(tags)],"samples":[\(samples)],"license":{"key":"mit","name":"MIT License","spdx_id":"MIT"},\
    "matrix":[[1,2,3],[4.5,6e2,-7],[]],"open_issues":\(rng.below(300)),"default_branch":"main"}
    """
}

func document(approximateBytes: Int, seed: UInt64) -> [UInt8] {
    var rng = SplitMix64(state: seed)
    var items: [String] = []
    var size = 0
    while size < approximateBytes - 64 {
        let text = item(items.count, &rng)
        size += text.utf8.count + 1
        items.append(text)
    }
    let text = "{\"total_count\":\(items.count),\"incomplete_results\":false,\"items\":[\n\(items.joined(separator: ",\n"))\n]}"
    return Array(text.utf8)
}

/// Best (shortest) time per iteration over several rounds, in seconds, with a monotonic clock.
/// `afterRound` runs outside the timed region (to release values a round kept).
func measure(rounds: Int = 9, minimumSeconds: Double = 0.3, _ body: () -> Void, afterRound: () -> Void = {}) -> Double {
    body()  // warm up caches and lazy initialisation
    afterRound()
    var iterations = 1
    while true {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<iterations { body() }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        afterRound()
        if elapsed >= minimumSeconds / Double(rounds) || iterations >= 1 << 20 { break }
        iterations *= 2
    }
    var best = Double.infinity
    for _ in 0..<rounds {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<iterations { body() }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        afterRound()
        best = min(best, elapsed / Double(iterations))
    }
    return best
}

@inline(never) func sink<T>(_ value: T) { withExtendedLifetime(value) {} }

struct Row {
    var name: String
    var bytes: Int
    var tapwireParse: Double, tapwireRoundTrip: Double, foundationParse: Double, foundationRoundTrip: Double
    var tapwireCompact: Double
    var simdjsonMinify: Double? = nil, simdjsonValidate: Double? = nil
}

/// The keys the log redacts by default (`redact.jsonKeys`).
let redactedKeys = JSONKeySet(["password", "token", "access_token", "refresh_token", "authorization", "secret"])

// `--profile-parse` only loops Tapwire's parser on the 1 MB document, for `perf record`.
// `--profile-parse-small` does the same with the 64 KB document.
if CommandLine.arguments.contains("--profile-parse") {
    let bytes = document(approximateBytes: 1024 * 1024, seed: 1024)
    for _ in 0..<400 { sink(try? JSONParser.parse(bytes)) }
    exit(0)
}
if CommandLine.arguments.contains("--profile-parse-small") {
    let bytes = document(approximateBytes: 64 * 1024, seed: 64)
    for _ in 0..<6400 { sink(try? JSONParser.parse(bytes)) }
    exit(0)
}

// `--profile-compact FILE N` runs the log's one-pass compactor (with the default redacted
// keys) N times over FILE, for callgrind or `perf stat`: instructions per byte.
if let i = CommandLine.arguments.firstIndex(of: "--profile-compact"), i + 2 < CommandLine.arguments.count,
   let data = FileManager.default.contents(atPath: CommandLine.arguments[i + 1]), let n = Int(CommandLine.arguments[i + 2]) {
    let bytes = [UInt8](data)
    let keys = redactedKeys
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var ok = true
    for _ in 0..<n {
        out.removeAll(keepingCapacity: true)
        ok = ok && JSONCompactor.append(bytes, redacting: keys, into: &out)
    }
    sink(out)
    print("compacted \(bytes.count) B into \(out.count) B \(n) times, ok: \(ok)")
    exit(0)
}

var rows: [Row] = []
for (name, target, seed) in [("64 KB", 64 * 1024, UInt64(64)), ("1 MB", 1024 * 1024, UInt64(1024))] {
    let bytes = document(approximateBytes: target, seed: seed)
    let data = Data(bytes)
    let mb = Double(bytes.count) / 1_000_000

    // Sanity: both parsers accept the document and Tapwire's output re-parses to the same value.
    guard let parsed = try? JSONParser.parse(bytes),
          (try? JSONSerialization.jsonObject(with: data, options: [])) != nil else {
        print("benchmark document \(name) does not parse"); exit(1)
    }
    var written: [UInt8] = []
    JSONWriter.write(parsed, into: &written)
    guard (try? JSONParser.parse(written)) == parsed else { print("round trip changed \(name)"); exit(1) }

    let tParse = measure {
        sink(try? bytes.withUnsafeBytes { raw throws(JSONParseError) in try JSONParser.parse(raw) })
    }
    let tRound = measure {
        guard let value = try? JSONParser.parse(bytes) else { return }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        JSONWriter.write(value, into: &output)
        sink(output)
    }
    let fParse = measure { sink(try? JSONSerialization.jsonObject(with: data, options: [])) }
    let fRound = measure {
        guard let object = try? JSONSerialization.jsonObject(with: data, options: []) else { return }
        sink(try? JSONSerialization.data(withJSONObject: object, options: []))
    }
    var compacted: [UInt8] = []
    compacted.reserveCapacity(bytes.count)
    guard JSONCompactor.append(bytes, redacting: redactedKeys, into: &compacted),
          compacted == { var w: [UInt8] = []; JSONWriter.write(redactedKeys.redacting(parsed), into: &w); return w }() else {
        print("compactor and tree path differ on \(name)"); exit(1)
    }
    let tCompact = measure {
        compacted.removeAll(keepingCapacity: true)
        sink(JSONCompactor.append(bytes, redacting: redactedKeys, into: &compacted))
    }
    rows.append(Row(name: name, bytes: bytes.count,
                    tapwireParse: mb / tParse, tapwireRoundTrip: mb / tRound,
                    foundationParse: mb / fParse, foundationRoundTrip: mb / fRound,
                    tapwireCompact: mb / tCompact))
}

var simdjsonNotes = ""
// simdjson on the same bytes, in its own process (a C++ harness), one output line per document.
if let i = CommandLine.arguments.firstIndex(of: "--simdjson"), i + 1 < CommandLine.arguments.count {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-json-bench-\(ProcessInfo.processInfo.processIdentifier)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var files: [String] = []
    for (index, (target, seed)) in [(64 * 1024, UInt64(64)), (1024 * 1024, UInt64(1024))].enumerated() {
        let file = directory.appendingPathComponent("document-\(index).json")
        FileManager.default.createFile(atPath: file.path, contents: Data(document(approximateBytes: target, seed: seed)))
        files.append(file.path)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[i + 1])
    process.arguments = files
    let pipe = Pipe(), notes = Pipe()
    process.standardOutput = pipe
    process.standardError = notes
    do { try process.run() } catch { print("cannot run \(CommandLine.arguments[i + 1]): \(error)"); exit(1) }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    simdjsonNotes = String(decoding: notes.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
    guard process.terminationStatus == 0, lines.count == rows.count else { print("simdjson harness failed"); exit(1) }
    for (index, line) in lines.enumerated() {
        let fields = line.split(separator: " ").compactMap { Double($0) }
        guard fields.count == 3, Int(fields[0]) == rows[index].bytes else { print("simdjson harness: unexpected line \(line)"); exit(1) }
        rows[index].simdjsonMinify = fields[1]
        rows[index].simdjsonValidate = fields[2]
    }
}

func format(_ value: Double, width: Int = 10) -> String {
    let text = String(format: "%.1f", value)
    return String(repeating: " ", count: max(0, width - text.count)) + text
}

print("MB/s, best of 9 rounds; every figure includes releasing what was built")
print("document      bytes   tapwire parse  tapwire p+w  foundation parse  foundation p+w")
var failures: [String] = []
for row in rows {
    print("\(row.name.padding(toLength: 8, withPad: " ", startingAt: 0)) \(format(Double(row.bytes), width: 9).dropLast(2))"
          + "   \(format(row.tapwireParse, width: 12))  \(format(row.tapwireRoundTrip, width: 11))"
          + "  \(format(row.foundationParse, width: 16))  \(format(row.foundationRoundTrip, width: 14))")
}
print("")
for row in rows {
    let parseRatio = row.tapwireParse / row.foundationParse
    let roundTripRatio = row.tapwireRoundTrip / row.foundationRoundTrip
    print("\(row.name): parse \(format(parseRatio, width: 0))x Foundation, parse+write \(format(roundTripRatio, width: 0))x Foundation")
    if row.tapwireParse < 200 { failures.append("\(row.name): parse \(format(row.tapwireParse, width: 0)) MB/s < 200 MB/s") }
    if roundTripRatio < 10 { failures.append("\(row.name): parse+write only \(format(roundTripRatio, width: 0))x Foundation (< 10x)") }
}
print("")
print("validate+compact, redaction on (MB/s): tapwire against simdjson (minify; full validation)")
if !simdjsonNotes.isEmpty { print(simdjsonNotes.trimmingCharacters(in: .whitespacesAndNewlines)) }
for row in rows {
    var line = "\(row.name.padding(toLength: 8, withPad: " ", startingAt: 0)) tapwire \(format(row.tapwireCompact, width: 8))"
        + "  (\(format(row.tapwireCompact / row.foundationRoundTrip, width: 0))x Foundation p+w)"
    if let minify = row.simdjsonMinify, let validate = row.simdjsonValidate {
        line += "   simdjson minify \(format(minify, width: 8)) (tapwire \(String(format: "%.2f", row.tapwireCompact / minify))x)"
            + "   simdjson validate \(format(validate, width: 8)) (tapwire \(String(format: "%.2f", row.tapwireCompact / validate))x)"
    }
    print(line)
    if row.tapwireCompact < 1000 { failures.append("\(row.name): validate+compact \(format(row.tapwireCompact, width: 0)) MB/s < 1000 MB/s") }
}
if failures.isEmpty {
    print("goals met: parse >= 200 MB/s, parse+write >= 10x Foundation, validate+compact >= 1000 MB/s")
} else {
    for failure in failures { print("GOAL NOT MET: \(failure)") }
    exit(1)
}
