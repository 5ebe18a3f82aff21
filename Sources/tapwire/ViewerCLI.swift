import Configuration
import ExchangeLog
import Foundation
import LogTools
import ProxyEngine
import ResponseSerialization
import TLSInterception
import Viewer

/// The web viewer's two homes: `tapwire view` (read-only, over existing logs, on an address of
/// its own) and `tapwire run` (on the proxy's listen address, with replay through the proxy).
enum ViewerCLI {
    static let defaultViewListen = "127.0.0.1:8090"

    /// `tapwire view`: serves until killed; exit 2 for a bad address, 1 when it cannot listen.
    static func view(config: TapwireConfiguration, logDirectory: String?, listen: String?) -> Int32 {
        let text = listen ?? defaultViewListen
        guard let address = SocketAddress(parsing: text) else {
            fail("--listen: expected a numeric HOST:PORT such as 127.0.0.1:8090, found \"\(text)\"", code: 2)
        }
        if !address.isLoopback && !config.accessGiven {
            fail("--listen: \(text) is not loopback: set access.allow in the config first", code: 2)
        }
        var log = config.log
        if let logDirectory { log.directory = logDirectory }
        // Said now rather than as an empty page: a mistyped --log-dir, or logs only root may read.
        let directory = log.resolvedDirectory
        guard access(directory, R_OK | X_OK) == 0 else {
            fail("cannot read log directory \(directory): \(String(cString: strerror(errno)))", code: 1)
        }
        let server = ViewerServer(settings: config.viewer, layout: LogFileLayout(settings: log), replayer: nil)
        let bound: SocketAddress
        do {
            bound = try server.listen(on: address, allow: config.engine.allow)
        } catch {
            fail("\(error)", code: 1)
        }
        print("tapwire view: open \(url(bound)) (read-only, records in \(log.resolvedDirectory))")
        fflush(stdout)
        signal(SIGPIPE, SIG_IGN)
        while true { pause() }
    }

    static func url(_ address: SocketAddress) -> String {
        let host = address.isUnspecified ? (address.family == AF_INET6 ? "[::1]" : "127.0.0.1")
                                         : address.family == AF_INET6 ? "[\(address.host)]" : address.host
        return "http://\(host):\(address.port)/"
    }

    /// The viewer `tapwire run` serves, replaying through its own listener.
    static func forRun(config: TapwireConfiguration) -> ViewerServer? {
        guard config.viewer.enabled else { return nil }
        let tls = config.tls
        let https = ReplayClient.HTTPS(
            proxyCAFile: tls.caDirectory + "/" + CertificateAuthority.certificateFileName,
            upstreamCAFile: tls.upstreamCAFile, insecureUpstream: tls.insecureUpstream,
            proxyDecrypts: { HTTPSInterception.intercepts(host: $0, config: tls) })
        let maxBody = config.engine.captureMaxBodyBytes
        let replayer: ViewerServer.Replayer = { record, proxy in
            guard let route = ReplayClient.proxyRoute(proxy.description) else { throw ViewerReplayError("not HOST:PORT: \(proxy)") }
            let client = ReplayClient(route: route, https: https)
            let request = try RecordedRequest(record: record, captureMaxBodyBytes: maxBody)
            if let reason = request.replayRefusal ?? client.refusal(request) { throw ViewerReplayError("refused: \(reason)") }
            let response = try client.send(request)
            return "\(response.status) \(response.reason)"
        }
        return ViewerServer(settings: config.viewer, layout: LogFileLayout(settings: config.log), replayer: replayer)
    }
}

struct ViewerReplayError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
