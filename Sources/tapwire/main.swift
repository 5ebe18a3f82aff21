import Configuration
import Foundation
import ProxyEngine
import TLSInterception

// Exit codes (docs/configuration.md): 0 success, 1 runtime failure, 2 bad usage or bad config.
let usageText = """
usage: tapwire run [--config FILE] [--listen HOST:PORT] [--log-dir DIR] [--replay-from DIR]
       tapwire check-config FILE   (or --config FILE)
       tapwire tail [--config FILE] [--log-dir DIR] [--follow] [--json] [EXPR...]
       tapwire har [--config FILE] [--log-dir DIR] [-o FILE] [EXPR...]
       tapwire query [--config FILE] [--log-dir DIR] [--json] [--count] [--limit N] [--reverse] EXPR...
       tapwire show|curl ID [--config FILE] [--log-dir DIR]
       tapwire diff ID1 ID2 [--config FILE] [--log-dir DIR]
       tapwire replay ID... | --query EXPR [--direct | --proxy HOST:PORT] [--timeout SECONDS] [--config FILE] [--log-dir DIR]
       tapwire view [--config FILE | --log-dir DIR] [--listen 127.0.0.1:PORT]
       tapwire env [--config FILE]
       tapwire ca export [--config FILE]
EXPR: a query such as  status>=500 host=*.example.com  (tapwire query --help; docs/query.md)

"""

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("tapwire: \(message)\n".utf8))
    exit(code)
}

/// `--name value` flags (and `switches`, which take no value) after the command;
/// unknown flags are usage errors.
func flags(_ args: ArraySlice<String>, allowed: Set<String>, switches: Set<String> = []) -> (values: [String: String], positional: [String]) {
    var values: [String: String] = [:]
    var positional: [String] = []
    var i = args.startIndex
    while i < args.endIndex {
        let a = args[i]
        if a == "--" {
            // The end of options: every later word is positional even when it starts with `-`.
            positional += args[args.index(after: i)...]
            break
        }
        if a == "-h" || a == "--help" {
            print(usageText, terminator: "")
            exit(0)
        } else if switches.contains(a) {
            values[a] = ""
        } else if a.hasPrefix("-") && a != "-" {
            var name = a
            var value: String?
            if let eq = a.firstIndex(of: "=") { name = String(a[..<eq]); value = String(a[a.index(after: eq)...]) }
            guard allowed.contains(name) else { fail("unknown option \(name) (see tapwire --help)", code: 2) }
            if value == nil {
                i += 1
                guard i < args.endIndex else { fail("\(name) needs a value", code: 2) }
                value = args[i]
            }
            values[name] = value
        } else {
            positional.append(a)
        }
        i += 1
    }
    return (values, positional)
}

func loadConfiguration(_ path: String?) -> TapwireConfiguration {
    guard let path else { return TapwireConfiguration() }
    switch TapwireConfiguration.load(path: path) {
    case .success(let c): return c
    case .failure(let list):
        for e in list.errors { FileHandle.standardError.write(Data("tapwire: \(path): \(e)\n".utf8)) }
        exit(2)
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("missing command\n\(usageText)", code: 2) }
let rest = arguments.dropFirst(2)

switch arguments[1] {
case "run":
    let f = flags(rest, allowed: ["--config", "--listen", "--log-dir", "--replay-from"])
    guard f.positional.isEmpty else { fail("unexpected argument \(f.positional[0])", code: 2) }
    var config = loadConfiguration(f.values["--config"])
    let overrideErrors = config.override(listen: f.values["--listen"], logDirectory: f.values["--log-dir"])
        + config.override(replayFrom: f.values["--replay-from"])
    if !overrideErrors.isEmpty { fail(overrideErrors.map(\.description).joined(separator: "\ntapwire: "), code: 2) }
    exit(ProxyService(configuration: config, configPath: f.values["--config"],
                      listenFlag: f.values["--listen"], logDirectoryFlag: f.values["--log-dir"],
                      replayFromFlag: f.values["--replay-from"]).run())

case "check-config":
    // `--config FILE` too: every other command names its file that way.
    let f = flags(rest, allowed: ["--config"])
    let files = f.positional + (f.values["--config"].map { [$0] } ?? [])
    guard files.count == 1 else { fail("check-config needs exactly one FILE", code: 2) }
    let path = files[0]
    switch TapwireConfiguration.load(path: path) {
    case .success(let c):
        print("\(path): ok: \(c.summary)")
        exit(0)
    case .failure(let list):
        // stderr holds one line per error, so scripts can count them; the
        // count is a summary, on stdout like the success line.
        for e in list.errors { FileHandle.standardError.write(Data("\(path): \(e)\n".utf8)) }
        print("\(path): \(list.errors.count) error(s)")
        exit(2)
    }

case "view":
    let f = flags(rest, allowed: ["--config", "--log-dir", "--listen"])
    guard f.positional.isEmpty else { fail("unexpected argument \(f.positional[0])", code: 2) }
    exit(ViewerCLI.view(config: loadConfiguration(f.values["--config"]), logDirectory: f.values["--log-dir"],
                        listen: f.values["--listen"]))

case "env":
    let f = flags(rest, allowed: ["--config"])
    guard f.positional.isEmpty else { fail("unexpected argument \(f.positional[0])", code: 2) }
    let config = loadConfiguration(f.values["--config"])
    // The first forward listener: a reverse or SOCKS one is no HTTP_PROXY.
    let forward = config.engine.listen.indices.filter { config.engine.mode(ofListener: $0) == .forward }.map { config.engine.listen[$0] }
    print(ProxyEnvironment.exports(listen: forward))

case "tail":
    let f = flags(rest, allowed: ["--config", "--log-dir"], switches: ["--follow", "-f", "--json"])
    exit(LogCommandsCLI.tail(config: loadConfiguration(f.values["--config"]), logDirectory: f.values["--log-dir"],
                             follow: f.values["--follow"] != nil || f.values["-f"] != nil,
                             json: f.values["--json"] != nil, filterWords: f.positional))

case "har":
    let f = flags(rest, allowed: ["--config", "--log-dir", "-o", "--output"])
    exit(LogCommandsCLI.har(config: loadConfiguration(f.values["--config"]), logDirectory: f.values["--log-dir"],
                            output: f.values["-o"] ?? f.values["--output"], filterWords: f.positional))

case "show", "curl", "diff":
    let f = flags(rest, allowed: ["--config", "--log-dir"])
    let config = loadConfiguration(f.values["--config"])
    let run = arguments[1] == "show" ? RecordCommandsCLI.show : arguments[1] == "curl" ? RecordCommandsCLI.curl : RecordCommandsCLI.diff
    exit(run(config, f.values["--log-dir"], f.positional))

case "replay":
    let f = flags(rest, allowed: ["--config", "--log-dir", "--proxy", "--timeout", "--query"], switches: ["--direct"])
    exit(RecordCommandsCLI.replay(config: loadConfiguration(f.values["--config"]), logDirectory: f.values["--log-dir"],
                                  ids: f.positional, query: f.values["--query"], direct: f.values["--direct"] != nil,
                                  proxy: f.values["--proxy"], timeout: f.values["--timeout"]))

case "query":
    // Words after `--` are the expression even when they start with `-`.
    let split = rest.firstIndex(of: "--")
    let optionWords = split.map { rest[..<$0] } ?? rest
    if optionWords.contains("-h") || optionWords.contains("--help") { print(LogCommandsCLI.queryHelp, terminator: ""); exit(0) }
    let f = flags(optionWords, allowed: ["--config", "--log-dir", "--limit", "-n"], switches: ["--json", "--count", "-c", "--reverse", "-r"])
    let expression = f.positional + (split.map { Array(rest[rest.index(after: $0)...]) } ?? [])
    exit(LogCommandsCLI.query(config: loadConfiguration(f.values["--config"]), logDirectory: f.values["--log-dir"],
                              json: f.values["--json"] != nil, count: f.values["--count"] != nil || f.values["-c"] != nil,
                              limit: f.values["--limit"] ?? f.values["-n"],
                              reverse: f.values["--reverse"] != nil || f.values["-r"] != nil, words: expression))

case "ca":
    if rest.first == "-h" || rest.first == "--help" { print(usageText, terminator: ""); exit(0) }
    guard rest.first == "export" else { fail("usage: tapwire ca export [--config FILE]", code: 2) }
    let f = flags(rest.dropFirst(), allowed: ["--config"])
    guard f.positional.isEmpty else { fail("unexpected argument \(f.positional[0])", code: 2) }
    let config = loadConfiguration(f.values["--config"])
    do {
        let ca = try CertificateAuthority.loadOrCreate(directory: config.tls.caDirectory)
        // The PEM alone on stdout (`> tapwire-ca.pem`); how to trust it on stderr.
        print(ca.certificatePEM, terminator: ca.certificatePEM.hasSuffix("\n") ? "" : "\n")
        FileHandle.standardError.write(Data(TrustInstructions.text(caPath: ca.certificatePath).utf8))
    } catch {
        fail("\(error)", code: 1)
    }

case "-h", "--help", "help":
    print(usageText, terminator: "")

default:
    fail("unknown command \(arguments[1]) (see tapwire --help)", code: 2)
}
