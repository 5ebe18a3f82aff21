import Configuration
import Foundation
import LogTools
import TLSInterception
import ResponseSerialization

/// `tapwire show`, `curl`, `replay` and `diff`: commands about single records, found by id in
/// the log (rotated and compressed files included). An id no record has is bad usage (exit 2).
enum RecordCommandsCLI {
    private static func records(_ ids: [String], config: TapwireConfiguration, logDirectory: String?) -> [String: JSON] {
        let source = RecordSource(directory: logDirectory ?? config.log.directory, fileName: config.log.fileName)
        do {
            return try RecordLookup.records(ids, in: source)
        } catch let error as RecordLookup.LookupError {
            fail("\(error)", code: 2)
        } catch {
            fail("\(error)", code: 1)
        }
    }

    private static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func show(config: TapwireConfiguration, logDirectory: String?, ids: [String]) -> Int32 {
        guard ids.count == 1 else { fail("show needs exactly one ID", code: 2) }
        let found = records(ids, config: config, logDirectory: logDirectory)
        if let record = found[ids[0]] { write(ExchangeDetail.render(record)) }
        return 0
    }

    static func curl(config: TapwireConfiguration, logDirectory: String?, ids: [String]) -> Int32 {
        guard ids.count == 1 else { fail("curl needs exactly one ID", code: 2) }
        let found = records(ids, config: config, logDirectory: logDirectory)
        guard let record = found[ids[0]] else { return 2 }
        do {
            write(CurlCommand.render(try RecordedRequest(record: record)))
            return 0
        } catch {
            fail("\(error)", code: 2)
        }
    }

    static func diff(config: TapwireConfiguration, logDirectory: String?, ids: [String]) -> Int32 {
        guard ids.count == 2 else { fail("diff needs two IDs", code: 2) }
        let found = records(ids, config: config, logDirectory: logDirectory)
        guard let a = found[ids[0]], let b = found[ids[1]] else { return 2 }
        let diff = ExchangeDiff(a, b)
        write(diff.text)
        return diff.isEmpty ? 0 : 1
    }

    /// Exit 0 when every request was sent, 1 when any was refused or failed (one line each on
    /// stderr, naming its id); the others are still sent.
    static func replay(config: TapwireConfiguration, logDirectory: String?, ids: [String], query: String?, direct: Bool,
                       proxy: String?, timeout: String?) -> Int32 {
        if query != nil && !ids.isEmpty { fail("replay takes IDs or --query EXPR, not both", code: 2) }
        guard !ids.isEmpty || query != nil else { fail("replay needs at least one ID, or --query EXPR", code: 2) }
        if direct && proxy != nil { fail("--direct and --proxy exclude each other", code: 2) }
        var seconds = ReplayClient.defaultTimeout
        if let timeout {
            guard let value = Double(timeout), value > 0, value.isFinite else { fail("--timeout: not a positive number of seconds: \(timeout)", code: 2) }
            seconds = value
        }
        let route: ReplayClient.Route
        if direct {
            route = .direct
        } else {
            let address = proxy ?? config.engine.listen.first ?? ""
            guard let r = ReplayClient.proxyRoute(address) else {
                fail("\(proxy != nil ? "--proxy" : "engine.listen"): not HOST:PORT: \(address)", code: 2)
            }
            route = r
        }
        let tls = config.tls
        let https = ReplayClient.HTTPS(
            proxyCAFile: tls.caDirectory + "/" + CertificateAuthority.certificateFileName,
            upstreamCAFile: tls.upstreamCAFile, insecureUpstream: tls.insecureUpstream,
            proxyDecrypts: { HTTPSInterception.intercepts(host: $0, config: tls) })
        let client = ReplayClient(route: route, timeout: seconds, https: https)
        // A peer closing mid-request must become a "failed" line, not end the command:
        // OpenSSL's socket writes, like plain ones, would raise SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let chosen: [(id: String, record: JSON)]
        if let query {
            let parsed: Query
            do {
                parsed = try Query.parse(query)
            } catch {
                fail("--query: \(error)", code: 2)
            }
            let source = RecordSource(directory: logDirectory ?? config.log.directory, fileName: config.log.fileName)
            do {
                chosen = try RecordLookup.exchanges(matching: parsed, in: source)
            } catch {
                fail("\(error)", code: 1)
            }
            if chosen.isEmpty { FileHandle.standardError.write(Data("tapwire: no exchange matches \(query)\n".utf8)) }
        } else {
            let found = records(ids, config: config, logDirectory: logDirectory)
            chosen = ids.compactMap { id in found[id].map { (id, $0) } }
        }
        var failed = false
        for (id, record) in chosen {
            func refuse(_ reason: String) {
                FileHandle.standardError.write(Data("tapwire: replay \(id) refused: \(reason)\n".utf8))
                failed = true
            }
            let request: RecordedRequest
            do {
                request = try RecordedRequest(record: record, captureMaxBodyBytes: config.engine.captureMaxBodyBytes)
            } catch {
                refuse("\(error)")
                continue
            }
            if let reason = request.replayRefusal ?? client.refusal(request) { refuse(reason); continue }
            do {
                let response = try client.send(request)
                write("\(id) \(request.method) \(request.url) → \(response.status) \(response.reason)\n")
            } catch {
                FileHandle.standardError.write(Data("tapwire: replay \(id) failed: \(error)\n".utf8))
                failed = true
            }
        }
        return failed ? 1 : 0
    }
}
